import AppStore
import AppStoreClients
import Fleet
import Ledger

/// One app's order as support sees it: Apple's transactions of the order (verified), and the
/// ledger's subscriptions and one-time purchases they belong to.
public struct FoundOrder: Sendable {
    public let orderID: String
    public let app: String
    /// Apple's transactions of the order, read as a receipt lists them.
    public let transactions: [ReceiptTransaction]
    /// The ledger's subscriptions of those transactions, each once.
    public let subscriptions: [SubscriptionRecord]
    /// The ledger's one-time purchases among those transactions.
    public let purchases: [PurchaseRecord]

    /// The ledger's subscription or purchase `transaction` belongs to, in words; nil when the ledger has neither.
    public func ledgerEntry(of transaction: ReceiptTransaction) -> String? {
        if let subscription = subscriptions.first(where: { $0.originalTransactionID == transaction.originalTransactionID }) {
            return "subscription \(subscription.id)"
        }
        return purchases.first { $0.purchase.transactionID == transaction.transactionID }.map { "one-time purchase \($0.id)" }
    }
}

/// The order a customer quotes from Apple's receipt email (`subscriptions show --order`, the
/// console's search): Look Up Order ID for each app asked (an order id is one app's, and Apple
/// answers only about the app the token names), then the ledger.
public enum OrderLookup {
    /// The orders of `apps` Apple knows by `orderID`: none when Apple knows it for none of them
    /// (Apple reads production only). Each lookup goes through `door`. Throws `OrderLookupError`
    /// when Apple could not be asked or refused.
    public static func find(_ orderID: String, apps: [String], door: AppleDoor, apple: AppleClients, ledger: Ledger) throws -> [FoundOrder] {
        var found: [FoundOrder] = []
        for app in apps {
            let client: ServerAPIClient
            do {
                client = try apple.serverAPIClient(forApp: app)
            } catch {
                throw OrderLookupError.noServerAPIKey
            }
            let transactions: [ReceiptTransaction]
            do {
                guard let listed = try door.call(.orderLookup, forApp: app, { try client.lookUpOrder(orderID) }) else { continue }
                transactions = listed
            } catch let closed as AppleDoorClosed {
                throw OrderLookupError.closed(closed)
            } catch let error as ServerAPICallError {
                throw OrderLookupError.refused(error)
            }
            var subscriptions: [SubscriptionRecord] = []
            for id in Set(transactions.map(\.originalTransactionID)).sorted() {
                if let subscription = try ledger.subscription(originalTransactionID: id, app: app) { subscriptions.append(subscription) }
            }
            let purchases = try transactions.compactMap { try ledger.purchase(transactionID: $0.transactionID, app: app) }
            found.append(FoundOrder(orderID: orderID, app: app, transactions: transactions, subscriptions: subscriptions, purchases: purchases))
        }
        return found
    }

    /// What support is told when Apple knows the order for none of `apps`.
    public static func unknown(_ orderID: String, apps: [String]) -> String {
        "Apple knows no order \(orderID.prefix(64)) of \(apps.joined(separator: ", ")). Look Up Order ID reads production only "
            + "(Apple has no sandbox for it): a sandbox or TestFlight purchase's order is never found. "
            + "Check the id against the customer's receipt email (letters and digits, such as MQ5V6W7X8Y)."
    }
}

/// Why an order could not be looked up, or was not found.
public enum OrderLookupError: Error, CustomStringConvertible {
    case noServerAPIKey
    /// Not asked: a pause, a halt or the endpoint's budget stood in the way.
    case closed(AppleDoorClosed)
    case refused(ServerAPICallError)
    /// No configured app has this name.
    case noApp(named: String, apps: [String])
    /// Apple knows the order for none of `apps`.
    case unknown(String, apps: [String])

    public var description: String {
        switch self {
        case .noApp(let name, let apps):
            return "No app is named '\(name)'; the apps are \(apps.joined(separator: ", "))."
        case .unknown(let orderID, let apps):
            return OrderLookup.unknown(orderID, apps: apps)
        case .noServerAPIKey:
            return "Orders are looked up through the App Store Server API: configure its key (server-api-key-file, "
                + "server-api-key-id, server-api-issuer-id; docs/appstore-server-api.md)."
        case .closed(let closed):
            return closed.description
        case .refused(let error):
            if error.code == 4_000_000 {
                return "Apple refused the order id as malformed: an order id is letters and digits, as on Apple's receipt email."
            }
            // A refused key (HTTP 401) is named by its id, never shown.
            return "The order could not be looked up: \(error). An HTTP 401 means Apple refused the key: check "
                + "server-api-key-id, server-api-issuer-id and the key file; otherwise try again."
        }
    }
}
