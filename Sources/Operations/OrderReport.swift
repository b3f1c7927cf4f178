import AppStore

/// `subscriptions show --order` as text: Apple's transactions of the order, each with the
/// ledger's subscription or purchase it belongs to.
public struct OrderReport {
    public let text: String

    public init(_ order: FoundOrder) {
        var lines = ["order \(order.orderID)  (\(order.app), Apple's Look Up Order ID, production): \(order.transactions.count) transaction(s)"]
        for transaction in order.transactions {
            lines.append("  \(transaction.transactionID)  \(transaction.productID ?? "-")  purchased \(transaction.purchaseDate?.description ?? "-")"
                + (transaction.expiresDate.map { "  expires \($0)" } ?? "")
                + (transaction.cancellationDate.map { "  refunded or revoked \($0)" } ?? ""))
            lines.append("    original_transaction_id \(transaction.originalTransactionID) → "
                + (order.ledgerEntry(of: transaction) ?? "not in the ledger"))
        }
        text = lines.joined(separator: "\n")
    }
}
