import Fleet
import FleetConfiguration
import JobQueue
import Lanes
import Ledger
import Logging

/// Which subscriptions an operator names (`subscriptions show`, `extend`, `verify`): one by its
/// id, every one with an original_transaction_id (it repeats across apps and environments), every
/// one linked to an account, or those of an order Apple knows by the id on its receipt email. An
/// account or an order is searched for in its app, when named, else in every configured app.
public enum SubscriptionSelection: Sendable {
    case id(Int64)
    case originalTransactionID(String)
    case account(String, app: String?)
    case order(String, app: String?)

    /// The ids selected; throws `NotFound` when there is none, and as `orders` for an order.
    public func ids(in ledger: Ledger, settings: FleetSettings) throws -> [Int64] {
        switch self {
        case .id(let id):
            return [id]
        case .originalTransactionID(let originalTransactionID):
            let ids = try ledger.subscriptions(originalTransactionID: originalTransactionID).map(\.id)
            guard !ids.isEmpty else { throw NotFound("No subscription has original_transaction_id \(originalTransactionID).") }
            return ids
        case .order(let order, _):
            let ids = try orders(in: ledger, settings: settings).flatMap { $0.subscriptions.map(\.id) }
            guard !ids.isEmpty else { throw NotFound("The ledger has no subscription of order \(order.prefix(64)).") }
            return ids
        case .account(let account, let app):
            let searched = app.map { [$0] } ?? settings.apps.names
            let ids = try searched.flatMap { try ledger.subscriptions(accountID: account, app: $0) }.map(\.id)
            guard !ids.isEmpty else {
                throw NotFound("No subscription is linked to account '\(account)' in \(searched.joined(separator: ", ")).")
            }
            return ids
        }
    }

    /// `subscriptions show`: the selected order's report, then each subscription's (an order's come
    /// with it: Apple is asked once), each told to `report` as it is read.
    public func show(in ledger: Ledger, settings: FleetSettings, report: (String) -> Void) throws {
        let orders = try orders(in: ledger, settings: settings)
        for order in orders { report(OrderReport(order).text) }
        let ids = if case .order = self { orders.flatMap { $0.subscriptions.map(\.id) } } else { try ids(in: ledger, settings: settings) }
        for id in ids {
            guard let detail = try ledger.detail(id: id) else { throw NotFound("No subscription \(id).") }
            report(SubscriptionReport(detail, refundRequests: try ledger.consumptionRequests(subscriptionID: id)).text)
        }
    }

    /// For an order, the orders Apple knows by its id (asked for each app searched, through the
    /// fleet's gate with an operator's patience), with the ledger's subscriptions and purchases of
    /// them; none for any other selection. Throws `OrderLookupError` when the app is unknown, Apple
    /// could not be asked or refused, or Apple knows the order for none of the apps.
    func orders(in ledger: Ledger, settings: FleetSettings) throws -> [FoundOrder] {
        guard case .order(let order, let app) = self else { return [] }
        if let app, settings.apps.app(named: app) == nil { throw OrderLookupError.noApp(named: app, apps: settings.apps.names) }
        let searched = app.map { [$0] } ?? settings.apps.names
        let (clock, metrics) = (settings.processClock(), FleetMetrics())
        defer { TimingsReporter.reportOnce(metrics, settings: settings, logger: Logger(label: "receiptfleet")) }
        let door = AppleDoor(
            gate: try FleetGate.connecting(settings), settings: settings, metrics: metrics, clock: clock,
            patience: AppleDoor.operatorPatience)
        let found = try OrderLookup.find(order, apps: searched, door: door, apple: try AppleClients(settings: settings, clock: clock), ledger: ledger)
        guard !found.isEmpty else { throw OrderLookupError.unknown(order, apps: searched) }
        return found
    }
}

/// Nothing matches what the operator named: said plainly (a command exits 1 without its usage,
/// since the command itself was right).
public struct NotFound: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
