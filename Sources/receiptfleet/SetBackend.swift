import AppStore
import ArgumentParser
import FleetFlags
import Ledger
import Operations
import Terminal

/// `receiptfleet subscriptions set-backend`
struct SetBackend: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-backend",
        abstract: "Move subscriptions between verifyReceipt and the App Store Server API.",
        discussion: """
            The Server API asks by original_transaction_id, so any subscription can move to it; \
            verifyReceipt needs the stored receipt, so subscriptions without one (a StoreKit 2 app's) \
            stay. `default` makes them follow the deployment's `backend` setting. Nothing else \
            changes: the next check asks the new backend, starting from what the old one last told, \
            so no event is lost or announced twice; a check in flight finishes as it began. \
            Moves go in pages of a few thousand, each its own short transaction, and the command \
            may be stopped and run again.

            Examples:
              receiptfleet subscriptions set-backend server-api 42
              receiptfleet subscriptions set-backend server-api --original-transaction-id 1000000218147500
              receiptfleet subscriptions set-backend server-api --all --environment Sandbox --dry-run
              receiptfleet subscriptions set-backend server-api --all --app default --from verify-receipt
              receiptfleet subscriptions set-backend default --all --from server-api
            """)

    @OptionGroup var options: FleetOptions

    @Argument(help: "verify-receipt, server-api, or default (the deployment's `backend` setting).", completion: .list(Self.backends))
    var backend: String

    static let backends = ["verify-receipt", "server-api", "default"]

    @Argument(help: "One subscription's id.")
    var id: Int64?

    @Option(name: .customLong("original-transaction-id"), help: "The subscriptions with this original_transaction_id.")
    var originalTransactionID: String?

    @Flag(help: "Every subscription the filters below leave (required when no id is given).")
    var all = false

    @Option(help: "Only this app's subscriptions.")
    var app: String?

    @Option(help: "Only subscriptions of this environment: Production or Sandbox.", completion: .list(["Production", "Sandbox"]))
    var environment: AppStoreEnvironment?

    @Option(help: "Only subscriptions on this backend now: verify-receipt, server-api, or default.", completion: .list(Self.backends))
    var from: String?

    @Flag(help: "Count what would move, and move nothing.")
    var dryRun = false

    func validate() throws {
        guard [id != nil, originalTransactionID != nil, all].filter({ $0 }).count == 1 else {
            throw ValidationError("Name the subscriptions: an id, --original-transaction-id, or --all (with filters).")
        }
    }

    /// The subscriptions chosen, as the audit trail names them.
    private var selectionDescription: String {
        let parts = [id.map { "id=\($0)" }, originalTransactionID.map { "original_transaction_id=\($0)" }, all ? "all" : nil,
                     app.map { "app=\($0)" }, environment.map { "environment=\($0.rawValue)" }, from.map { "from=\($0)" }]
        return parts.compactMap(\.self).joined(separator: " ")
    }

    func run() throws {
        let target = try Self.parse(backend, "the backend")
        var selection = BackendSelection(app: app, currentBackend: try from.map { try Self.parse($0, "--from") })
        selection.environment = environment
        if let id { selection.ids = [id] }
        let progress = ProgressLine()
        do {
            let lines = try moveSubscriptionsBackend(
                to: target, selection, originalTransactionID: originalTransactionID, described: selectionDescription, dryRun: dryRun,
                settings: options.settings()) { total in progress.show("\(dryRun ? "would move" : "moved") \(total.moved)") }
            progress.finish()
            for line in lines { print(line) }
        } catch let refused as BackendChangeRefused {
            throw ValidationError(refused.description)
        }
    }

    /// A backend as typed: verify-receipt, server-api, or default (nil).
    static func parse(_ text: String, _ name: String) throws -> VerificationBackend? {
        if text == "default" { return nil }
        guard let backend = VerificationBackend(argument: text) else {
            throw ValidationError("\(name) must be verify-receipt, server-api or default, not '\(text)'.")
        }
        return backend
    }
}
