import ArgumentParser
import FleetConfiguration
import FleetFlags
import Foundation
import Ledger
import PostgresClient

/// `receiptfleet audit`
struct Audit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the audit trail: who paused, resumed, replayed, purged, changed webhooks, moved backends or forgot customers.",
        discussion: """
            Every operator action from the command line (as its OS user), the API (as its client) or \
            the console (as its operator) is recorded in PostgreSQL with when, what, on what and how it \
            ended. The trail is never pruned. Newest first.

            Examples:
              receiptfleet audit
              receiptfleet audit --since 2026-11-24 --action fleet
              receiptfleet audit --action dead.purge --json
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "Only entries at or after this time: 2026-11-24 or 2026-11-24T02:00:00Z.")
    var since: String?

    @Option(help: "Only this action and its sub-actions: fleet, fleet.pause, dead, webhooks.add, ….")
    var action: String?

    @Option(help: "At most this many entries.")
    var limit = 100

    @Flag(help: "Print JSON lines instead of a table.")
    var json = false

    func run() throws {
        let settings = try options.settings()
        let from = try since.map { try sinceArgument($0, now: settings.processClock().now()) }
        let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
        let entries = try ledger.auditTrail(since: from, action: action, limit: limit)
        if entries.isEmpty, !json { print("No audit entries match.") }
        for entry in entries { print(json ? try entry.json() : entry.line) }
    }
}
