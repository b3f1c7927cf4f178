import Crypto
import Foundation

/// A V2 notification the simulated App Store sent (or would have) about one subscription: what
/// happened, when, and the transaction and renewal as they were then.
struct SimulatedNotification: Sendable {
    let type: String
    let subtype: String?
    let uuid: String
    let signedDateMs: Int64
    let environment: SimulatedEnvironment
    let app: String
    let transaction: SimulatedTransaction
    let renewalCount: Int
    let renewal: PendingRenewal
    /// A CONSUMPTION_REQUEST's `consumptionRequestReason`.
    var consumptionRequestReason: String? = nil

    /// The `signedPayload` Apple posts: `ResponseBodyV2DecodedPayload`, signed by the chain.
    func signedPayload(signing: SimulatorSigningChain) -> String {
        var json = JSONWriter(capacity: 4096)
        json.beginObject()
        json.string("notificationType", type)
        if let subtype { json.string("subtype", subtype) }
        json.string("notificationUUID", uuid)
        json.beginObject("data")
        json.number("appAppleId", Catalog.appItemID)
        json.string("bundleId", app)
        json.string("bundleVersion", "1")
        json.string("environment", environment.rawValue)
        json.string("signedTransactionInfo", signing.sign(ServerAPIEndpoint.transactionPayload(
            transaction, of: app, renewalCount: renewalCount, environment: environment, now: signedDateMs)))
        json.string("signedRenewalInfo", signing.sign(ServerAPIEndpoint.renewalPayload(renewal, environment: environment, now: signedDateMs)))
        if let consumptionRequestReason { json.string("consumptionRequestReason", consumptionRequestReason) }
        json.endObject()
        json.string("version", "2.0")
        json.number("signedDate", signedDateMs)
        json.endObject()
        return signing.sign(json.finish())
    }
}

extension SimulatedReceipt {
    /// The notifications Apple sends about this receipt's subscriptions from `startMs` up to (not
    /// including) `endMs`: a purchase (SUBSCRIBED, then DID_RENEW for each renewal), auto-renew
    /// switched off, a refund the customer asked for (CONSUMPTION_REQUEST some hours before, then
    /// REFUND), an expiry (EXPIRED). A receipt Apple cannot vouch for sends none.
    func notifications(from startMs: Int64, until endMs: Int64) -> [SimulatedNotification] {
        guard fixedFailureStatus == nil else { return [] }
        return scripts.flatMap { script -> [SimulatedNotification] in
            let timeline = timeline(script)
            guard let last = timeline.snapshot(at: endMs - 1) else { return [] }
            var found: [(type: String, subtype: String?, at: Int64, position: Int)] = []
            for (position, transaction) in last.transactions.enumerated() {
                if position == 0 {
                    found.append(("SUBSCRIBED", "INITIAL_BUY", transaction.purchaseMs, position))
                } else if last.transactions[position - 1].isUpgraded {
                    found.append(("DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction.purchaseMs, position))
                } else {
                    found.append(("DID_RENEW", nil, transaction.purchaseMs, position))
                }
                if let refunded = transaction.cancellationMs, !transaction.isUpgraded {
                    if let asked = script.refund, asked.at == refunded {
                        found.append(("CONSUMPTION_REQUEST", nil, max(transaction.purchaseMs, refunded - Self.refundReviewMs), position))
                    }
                    found.append(("REFUND", nil, refunded, position))
                }
            }
            if let off = script.autoRenewOffAt { found.append(("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", off, last.transactions.count - 1)) }
            if last.status == .expired { found.append(("EXPIRED", last.renewal.autoRenewOn ? "BILLING_RETRY" : "VOLUNTARY", last.expiresMs, last.transactions.count - 1)) }
            return found.filter { (startMs..<endMs).contains($0.at) }.compactMap { event in
                // The renewal info as it stood then; the transaction is one the answer at that time lists.
                guard let then = timeline.snapshot(at: event.at), event.position < then.transactions.count else { return nil }
                var notification = SimulatedNotification(
                    type: event.type, subtype: event.subtype,
                    uuid: Self.uuid(token.receiptData, script.chain, event.type, event.at), signedDateMs: event.at,
                    environment: token.environment, app: token.bundleID, transaction: then.transactions[event.position],
                    renewalCount: event.position, renewal: then.renewal)
                if event.type == "CONSUMPTION_REQUEST" {
                    notification.consumptionRequestReason = script.refund?.reason == 1 ? "FULFILLMENT_ISSUE" : "OTHER"
                }
                return notification
            }
        }
    }

    /// How long before a refund the customer asked for it (and Apple asked the developer).
    static let refundReviewMs: Int64 = 6 * 3_600_000

    /// The same notification always gets the same notificationUUID: a digest of what it is about.
    private static func uuid(_ receipt: String, _ chain: Int, _ type: String, _ at: Int64) -> String {
        let hex = SHA256.hash(data: Data("\(receipt)/\(chain)/\(type)/\(at)".utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }
}
