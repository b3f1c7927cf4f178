import ArgumentParser
import Foundation
import Operations

/// `receiptfleet status`
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the queue, the fleet and the ledger at a glance.",
        discussion: """
            Ready, reserved, delayed and dead jobs, the oldest job's age, throughput over the last \
            minute and Apple's status mix, pause and halt, live workers, the last scheduler pass and \
            the outbox lag, all read from Redis and PostgreSQL.

            Examples:
              receiptfleet status
              receiptfleet status --watch
              receiptfleet status --json | jq .queue
            """)

    @OptionGroup var options: FleetOptions

    @Flag(help: "Refresh every 2 seconds until interrupted.")
    var watch = false

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        let settings = try options.settings()
        repeat {
            let status = try FleetStatus.read(settings: settings)
            if json {
                print(try status.json())
            } else {
                if watch { print("\u{1B}[2J\u{1B}[H", terminator: "") }
                print(status.text)
            }
            if watch { Thread.sleep(forTimeInterval: 2) }
        } while watch
    }
}
