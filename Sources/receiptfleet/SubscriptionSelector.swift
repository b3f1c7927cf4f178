import ArgumentParser
import Fleet
import FleetConfiguration
import JobQueue
import Lanes
import Ledger
import Operations

/// Which subscriptions a command is about: one by its id, every one with an original_transaction_id
/// (it repeats across apps and environments), every one linked to an account, or those of an
/// order Apple knows by the id on its receipt email.
struct SubscriptionSelector: ParsableArguments {
    @Argument(help: "The subscription id.")
    var id: Int64?

    @Option(name: .customLong("original-transaction-id"), help: "Find it by original_transaction_id instead.")
    var originalTransactionID: String?

    @Option(help: "Every subscription linked to this account id (as your app registered it) instead.")
    var account: String?

    @Option(help: """
        The order id on the customer's receipt email from Apple instead (Apple's Look Up Order ID, production only; \
        the server-api key is needed).
        """)
    var order: String?

    @Option(help: "Only this app (its name in apps-file): with --account or --order, every app by default; with extend --all-active, the product's app.")
    var app: String?

    /// Whether a subscription was named: a command may offer another way (`extend --all-active`),
    /// and then checks itself that one way was taken.
    var isGiven: Bool { id != nil || originalTransactionID != nil || account != nil || order != nil }

    func validate() throws {
        guard [id != nil, originalTransactionID != nil, account != nil, order != nil].filter(\.self).count <= 1 else { throw Self.nameOne }
        guard app == nil || account != nil || order != nil || !isGiven else { throw ValidationError("--app goes with --account or --order.") }
    }

    private static let nameOne = ValidationError("Give one of: an id, --original-transaction-id, --account, --order.")

    /// The ids selected (for an account or an order, of the apps `--app` names, else every
    /// configured app); throws when there is none.
    func ids(in ledger: Ledger, settings: FleetSettings) throws -> [Int64] {
        guard isGiven else { throw Self.nameOne }
        if let id { return [id] }
        if let originalTransactionID {
            let ids = try ledger.subscriptions(originalTransactionID: originalTransactionID).map(\.id)
            guard !ids.isEmpty else { throw NotFound("No subscription has original_transaction_id \(originalTransactionID).") }
            return ids
        }
        if let order {
            let ids = try orders(in: ledger, settings: settings).flatMap { $0.subscriptions.map(\.id) }
            guard !ids.isEmpty else { throw NotFound("The ledger has no subscription of order \(order.prefix(64)).") }
            return ids
        }
        let searched = app.map { [$0] } ?? settings.apps.names
        let ids = try searched.flatMap { try ledger.subscriptions(accountID: account!, app: $0) }.map(\.id)
        guard !ids.isEmpty else {
            throw NotFound("No subscription is linked to account '\(account!)' in \(searched.joined(separator: ", ")).")
        }
        return ids
    }

    /// The orders Apple knows by `--order` (asked for each app searched), with the ledger's
    /// subscriptions and purchases of them; throws when Apple knows it for none.
    func orders(in ledger: Ledger, settings: FleetSettings) throws -> [FoundOrder] {
        guard let order else { return [] }
        let searched = app.map { [$0] } ?? settings.apps.names
        if let app, settings.apps.app(named: app) == nil {
            throw ValidationError("No app is named '\(app)'; the apps are \(settings.apps.names.joined(separator: ", ")).")
        }
        let found: [FoundOrder]
        do {
            let door = AppleDoor(
                gate: try FleetGate.connecting(settings), settings: settings, metrics: FleetMetrics(), clock: SystemClock(),
                patience: AppleDoor.operatorPatience)
            found = try OrderLookup.find(order, apps: searched, door: door, apple: try AppleClients(settings: settings), ledger: ledger)
        } catch let error as OrderLookupError {
            throw ValidationError(error.description)
        }
        guard !found.isEmpty else { throw ValidationError(OrderLookup.unknown(order, apps: searched)) }
        return found
    }
}

/// Nothing matches what the operator named: said plainly, with exit status 1 and without the
/// usage, since the command itself was right.
struct NotFound: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
