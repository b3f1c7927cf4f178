import ArgumentParser
import Foundation

/// `receiptfleet simulate-appstore`: the stand-in for Apple's verifyReceipt.
struct SimulateAppStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate-appstore",
        abstract: "Simulate Apple's verifyReceipt: seed receipts with known truth, then serve them.",
        discussion: """
            Receipts are tokens that encode a seed, an index and a time; every answer is computed from \
            the token and the simulator's clock, so the server stores nothing and `seed` can tell, for \
            each subscription, what a correct verification must conclude.

              receiptfleet simulate-appstore seed --count 1000 --seed 7 --out fleet.jsonl
              receiptfleet simulate-appstore serve --port 9180 --latency 150ms±50ms
            """,
        subcommands: [Seed.self, Serve.self])
}

/// Reads `now` or an ISO 8601 time such as `2026-11-20T09:00:00Z` into ms since 1970.
func parseTime(_ text: String) throws -> Int64 {
    if text == "now" { return Int64(Date().timeIntervalSince1970 * 1000) }
    guard let date = try? Date(text, strategy: .iso8601) else {
        throw ValidationError("'\(text)' is not a time: use now or ISO 8601 such as 2026-11-20T09:00:00Z.")
    }
    return Int64(date.timeIntervalSince1970 * 1000)
}

/// Prints a line at once, even when stdout is a pipe or a file.
func log(_ line: String) {
    print(line)
    fflush(nil)  // all output streams: stdout is a C global Swift 6 will not touch from here
}
