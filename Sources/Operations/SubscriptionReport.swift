import AppStore
import Foundation
import Ledger

/// `subscriptions show` as text. Receipts never appear: the record holds none.
public struct SubscriptionReport {
    public let text: String

    /// `refundRequests`: the customer's refund requests Apple asked about (CONSUMPTION_REQUEST), newest first.
    public init(_ detail: SubscriptionDetail, refundRequests: [ConsumptionRequestRecord] = []) {
        let record = detail.subscription
        let state = record.state
        var lines = [
            "subscription \(record.id)  (\(record.app), original_transaction_id \(record.originalTransactionID))",
            "  environment   \(record.environment.rawValue)",
            "  backend       \(record.backend.map { "\($0)" } ?? "the deployment's default")",
            "  account       \(record.accountID ?? "-")",
            "  status        \(record.status?.rawValue ?? "unverified")",
            "  product       \(state?.productID ?? "-")",
            "  expires       \(state?.expiresAt?.description ?? "-")",
            "  auto-renew    \(state?.autoRenew.map { $0 ? "on" : "off" } ?? "-")",
            "  last verified \(record.lastVerifiedAt.map { "\($0)" } ?? "never") (\(record.lastOutcome?.rawValue ?? "-"))",
            "  next check    \(record.nextCheckAt.map { "\($0)" } ?? "on notification only")",
            "  transactions  \(detail.transactions.count)",
        ]
        for transaction in detail.transactions.suffix(5) {
            lines.append("    \(transaction.transactionID)  \(transaction.productID ?? "-")  "
                + "\(transaction.purchasedAt?.description ?? "-") → \(transaction.expiresAt?.description ?? "-")"
                + (transaction.cancelledAt.map { "  cancelled \($0)" } ?? ""))
        }
        lines.append("  events        \(detail.events.count)")
        for stored in detail.events.suffix(10) {
            lines.append("    \(stored.event.type.rawValue)  \(stored.event.occurredAt)  "
                + (stored.publishedAt == nil ? "unpublished" : "published") + "  [\(stored.event.id)]")
        }
        lines.append("  verifications \(detail.verifications.count) recent")
        for attempt in detail.verifications.prefix(5) {
            lines.append("    \(attempt.attemptedAt)  \(attempt.outcome.rawValue)  \(attempt.backend.map { "\($0)" } ?? "-")"
                + "  apple \(attempt.appleStatus.map(String.init) ?? "-")"
                + (attempt.error.map { "  \($0)" } ?? ""))
        }
        if !refundRequests.isEmpty { lines.append("  refund requests \(refundRequests.count)") }
        for request in refundRequests.prefix(5) {
            let outcome = switch request.state {
            case "answered": "answered \(request.answeredAt.map { "\($0)" } ?? "")  \(request.answer ?? "")"
            case "unanswered": "unanswered: \(request.unansweredReason ?? "-")"
            case "pending": "pending, \(request.attempts) attempts" + (request.lastError.map { ", last: \($0)" } ?? "")
            default: "missed: the deadline passed unanswered"
            }
            lines.append("    \(request.transactionID)  asked \(request.signedAt)  deadline \(request.deadline)  \(outcome)")
        }
        text = lines.joined(separator: "\n")
    }
}
