import Foundation

extension Inspection {
    /// The inspection as `receiptfleet inspect` prints it by default: JSON, receipts redacted.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.userInfo[ReceiptData.redactInJSON] = true
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The inspection as `receiptfleet inspect --format table` prints it: a line per fact.
    public var table: String {
        let inspection = self
        var lines = [
            "status       \(inspection.status) (\(inspection.action))",
            "environment  \(inspection.environment?.rawValue ?? "unknown")",
        ]
        for subscription in inspection.subscriptions {
            let state = subscription.state
            lines.append("")
            lines.append("subscription \(subscription.originalTransactionID)")
            lines.append("  status       \(state.status.rawValue)")
            lines.append("  product      \(state.productID ?? "-")")
            lines.append("  expires      \(state.expiresAt?.description ?? "-")")
            lines.append("  auto-renew   \(state.autoRenew.map { $0 ? "on" : "off" } ?? "-")"
                + (state.autoRenewProductID.map { $0 != state.productID ? " (next: \($0))" : "" } ?? ""))
            if let intent = state.expirationIntent {
                lines.append("  expiry why   \(intent): \(expirationIntentMeaning(intent) ?? "undocumented")")
            }
            if let cancellation = state.cancellation {
                lines.append(cancelledLine(cancellation))
            }
            lines.append("  transactions \(subscription.transactions)")
            for event in subscription.events {
                lines.append("  event        \(event.type.rawValue) at \(event.occurredAt) [\(event.id)]")
            }
        }
        for purchase in inspection.purchases {
            lines.append("")
            lines.append("purchase     \(purchase.transactionID) (one-time)")
            lines.append("  status       \(purchase.status.rawValue)")
            lines.append("  product      \(purchase.productID ?? "-")")
            lines.append("  purchased    \(purchase.purchasedAt?.description ?? "-")")
            if let cancellation = purchase.cancellation {
                lines.append(cancelledLine(cancellation))
            }
        }
        return lines.joined(separator: "\n")
    }

    private func cancelledLine(_ cancellation: Cancellation) -> String {
        "  cancelled    \(cancellation.cancelledAt) (reason \(cancellation.reason.map(String.init) ?? "-"))"
    }
}
