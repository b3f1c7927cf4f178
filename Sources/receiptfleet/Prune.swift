import ArgumentParser
import Ledger
import PostgresClient
import Terminal

/// `receiptfleet prune`
struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete the history the retention settings no longer keep.",
        discussion: """
            Verification attempts older than retention-verifications-days (90), published events older \
            than retention-events-days (400; never one a webhook still waits for), ended webhook \
            deliveries and attempts older than retention-webhook-logs-days (30), and the receipts of \
            subscriptions expired or refunded longer than retention-expired-receipts-days (400) ago. \
            0 keeps that kind for ever. Subscriptions, purchases, transactions and the audit trail are \
            never pruned. Deletes in batches, each a short transaction of its own, so workers go on \
            meanwhile; safe to stop and to run again. Run it daily (deploy/ has a timer and a CronJob).

            Examples:
              receiptfleet prune
              receiptfleet prune --batch-size 2000
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "Rows deleted per transaction.")
    var batchSize = 5_000

    func validate() throws {
        guard (100...100_000).contains(batchSize) else { throw ValidationError("--batch-size must be from 100 to 100000.") }
    }

    func run() throws {
        let settings = try options.settings()
        let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
        let progress = ProgressLine()
        let pruned = try ledger.prune(settings.retention, defaultBackend: settings.defaultBackend, batchSize: batchSize) {
            progress.show("deleted \($0.total) row(s) in \($0.batches) batch(es)")
        }
        progress.finish()
        print(pruned.summary)
    }
}
