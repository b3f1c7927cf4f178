import AppStoreSimulator
import ArgumentParser
import Foundation

extension SimulateAppStore {
    /// `receiptfleet simulate-appstore seed`
    struct Seed: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write simulated receipts and the ground truth of each subscription as JSON lines.",
            discussion: """
                Writes one line per subscription (receipts of kind two_groups hold two): receipt_data, \
                original_transaction_id, environment, kind and the state at --at: status (active, in_grace, \
                in_billing_retry, expired, refunded, invalid), product_id, expires_at_ms, auto_renew, \
                auto_renew_product_id, expiration_intent, ownership. Lifecycles are centred on --at, so \
                serve the receipts with the simulator's clock starting there.

                Examples:
                  receiptfleet simulate-appstore seed --count 1000 --seed 7 --out fleet.jsonl
                  receiptfleet simulate-appstore seed --count 14 --seed 1 --at 2026-11-20T09:00:00Z --out kinds.jsonl
                """)

        @Option(help: "How many receipts to create (indices 0..<count; kinds cycle through the indices).")
        var count: Int

        @Option(help: "The seed every lifecycle is drawn from.")
        var seed: UInt64

        @Option(help: "The time the lifecycles are centred on and the truth is told for: now or ISO 8601.")
        var at: String = "now"

        @Option(help: "The JSON lines file to write.")
        var out: String

        func validate() throws {
            guard count > 0 else { throw ValidationError("--count must be at least 1.") }
        }

        func run() throws {
            let atMs = try parseTime(at) / 1000 * 1000
            guard FileManager.default.createFile(atPath: out, contents: nil),
                let file = FileHandle(forWritingAtPath: out)
            else { throw ValidationError("Cannot create \(out): check the directory exists and is writable.") }
            defer { try? file.close() }

            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var chunk = Data()
            var statuses: [SubscriptionStatus: Int] = [:]
            var lines = 0
            for receipt in SimulatedReceipt.fleet(count: count, seed: seed, anchorMs: atMs) {
                for subscription in receipt.subscriptions {
                    let truth = subscription.groundTruth(at: atMs)
                    chunk.append(try encoder.encode(truth))
                    chunk.append(UInt8(ascii: "\n"))
                    statuses[truth.status, default: 0] += 1
                    lines += 1
                }
                if chunk.count > 1 << 20 {
                    try file.write(contentsOf: chunk)
                    chunk.removeAll(keepingCapacity: true)
                }
            }
            try file.write(contentsOf: chunk)
            let summary = SubscriptionStatus.allCases.map { "\($0.rawValue)=\(statuses[$0, default: 0])" }
            log("wrote \(lines) subscriptions of \(count) receipts to \(out) (\(summary.joined(separator: " ")))")
        }
    }
}
