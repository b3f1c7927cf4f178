import ArgumentParser
import FleetConfiguration
import Ledger
import Operations
import PostgresClient

/// `receiptfleet subscriptions forget`
struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete a customer's data: subscriptions, receipts, transactions, states and the account link.",
        discussion: """
            For a deletion request (GDPR and the like). Deletes, in one transaction, the subscriptions \
            chosen with their receipts, transactions, verification attempts, notifications and events \
            (with their webhook deliveries); with --account, the account's one-time purchases and pending \
            claims too. Events already published stay with their consumers: each deleted subscription \
            leaves one `subscription_forgotten` event (a purchase, `purchase_forgotten`) telling them to \
            delete theirs (docs/events.md). Without --yes it only says what it would delete. Forgetting \
            what is already gone deletes nothing and succeeds. Recorded in the audit trail.
            The same for an account over the API: DELETE /v1/accounts/{id}.

            Examples:
              receiptfleet subscriptions forget --account user-8812
              receiptfleet subscriptions forget --account user-8812 --app photos --yes
              receiptfleet subscriptions forget --original-transaction-id 1000000218147500 --yes
              receiptfleet subscriptions forget 42 --yes
            """)

    enum Words: SubscriptionWords {
        static let id = "One subscription's id."
        static let originalTransactionID = "The subscriptions with this original_transaction_id."
        static let account = "Everything linked to this account of the app."
    }

    @OptionGroup var options: FleetOptions

    @OptionGroup var named: SubscriptionNames<Words>

    @Option(help: "The app, a name from apps-file (--account: the app whose account it is, needed when there are several; --original-transaction-id: only this app's).")
    var app: String?

    @Flag(help: "Delete. Without it, nothing is deleted: the command says what would be.")
    var yes = false

    func validate() throws {
        guard named.given == 1 else { throw ValidationError("Name what to forget: an id, --original-transaction-id, or --account.") }
        if named.id != nil, app != nil { throw ValidationError("--app goes with --account or --original-transaction-id, not an id.") }
    }

    /// What to forget; an account is each app's own, so it needs the app when there are several.
    private func target(in apps: AppCatalog) throws -> ForgetTarget {
        _ = try apps.named(app)
        if let id = named.id { return .subscription(id: id) }
        if let originalTransactionID = named.originalTransactionID { return .originalTransaction(id: originalTransactionID, app: app) }
        return .account(id: named.account ?? "", app: try apps.owner(app, of: "Accounts"))
    }

    func run() throws {
        let settings = try options.settings()
        let target = try target(in: settings.apps)
        let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
        guard yes else {
            let would = try ledger.forget(target, dryRun: true)
            print(would.isEmpty ? "Nothing to forget: \(target) has no data here." : "Would forget \(would). Add --yes to delete.")
            return
        }
        let forgotten = try audited(
            "subscriptions.forget", target: target.description, settings: settings, results: \.auditDetails
        ) { try ledger.forget(target) }
        print(forgotten.isEmpty ? "Nothing to forget: \(target) has no data here." : "Forgot \(forgotten).")
    }
}
