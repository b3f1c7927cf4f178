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
    /// including) `endMs`: one for every change its answers show (`Announcements`), at the moment
    /// they start to show it, and a CONSUMPTION_REQUEST some hours before a refund the customer
    /// asked for. A receipt Apple cannot vouch for sends none.
    func notifications(from startMs: Int64, until endMs: Int64) -> [SimulatedNotification] {
        guard fixedFailureStatus == nil else { return [] }
        return scripts.flatMap { script -> [SimulatedNotification] in
            let timeline = timeline(script)
            var found: [SimulatedNotification] = []
            for at in Announcements.moments(of: script, timeline, until: endMs) where (startMs..<endMs).contains(at) {
                guard let after = timeline.snapshot(at: at) else { continue }
                let before = timeline.snapshot(at: at - 1)
                for (type, subtype, position) in Announcements(before: before, after: after, at: at, ownership: script.ownership).notifications {
                    found.append(notification(type, subtype, at: at, about: after.transactions[position], position, after.renewal, script))
                }
            }
            if let asked = script.refund, let then = timeline.snapshot(at: asked.at), let position = then.transactions.lastIndex(where: {
                $0.cancellationMs == asked.at
            }) {
                let at = max(then.transactions[position].purchaseMs, asked.at - Self.refundReviewMs)
                // The transaction as it is when the customer asks: not refunded yet.
                if (startMs..<endMs).contains(at), let before = timeline.snapshot(at: at), before.transactions.indices.contains(position) {
                    var request = notification("CONSUMPTION_REQUEST", nil, at: at, about: before.transactions[position], position, before.renewal, script)
                    request.consumptionRequestReason = asked.reason == 1 ? "FULFILLMENT_ISSUE" : "OTHER"
                    found.append(request)
                }
            }
            return found
        }
    }

    private func notification(
        _ type: String, _ subtype: String?, at: Int64, about transaction: SimulatedTransaction, _ position: Int,
        _ renewal: PendingRenewal, _ script: ChainScript
    ) -> SimulatedNotification {
        SimulatedNotification(
            type: type, subtype: subtype, uuid: Self.uuid(token.receiptData, script.chain, type + (subtype ?? ""), at),
            signedDateMs: at, environment: token.environment, app: token.bundleID, transaction: transaction,
            renewalCount: position, renewal: renewal)
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
