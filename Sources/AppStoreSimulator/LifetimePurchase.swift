/// The lifetime non-consumable on a receipt of kind `lifetimePurchase`: bought once, never
/// expiring, listed without `expires_date`, and on some receipts refunded later. It is no
/// subscription: a correct reading lists it as a one-time purchase, owned until refunded.
public struct SimulatedLifetimePurchase: Sendable {
    public static let productID = "com.receiptfleet.demo.lifetime"

    public let transactionID: String
    /// When it was bought (ms).
    public let purchaseMs: Int64
    /// When Apple refunds it and why (cancellation_reason); nil for a purchase kept.
    public let refund: (atMs: Int64, reason: Int)?
    /// Whether it is the receipt's only purchase (odd rounds of the kinds); else a monthly
    /// subscription is beside it.
    public let isAlone: Bool

    /// The receipt's lifetime purchase; nil for other kinds.
    init?(token: ReceiptToken, kind: LifecycleKind) {
        guard kind == .lifetimePurchase else { return nil }
        // A stream of its own, so the subscription beside it tells a renewing receipt's story.
        var random = SeededRandom(seed: token.seed ^ 0x4C49_4645_5449_4D45, index: token.index)
        let month = Durations.of(token.environment).month
        transactionID = String(IdentifierScheme(seed: token.seed, index: token.index).transactionID(chain: 2, sequence: 0))
        purchaseMs = token.anchorMs - random.offset(in: 0...(2 * month))
        // Refunded on half the receipts, within a month either side of the anchor, so that both a
        // baseline and a later look can find the refund.
        refund = Bool.random(using: &random)
            ? (max(purchaseMs + Durations.minute, token.anchorMs + random.offset(in: -month...month)), Int.random(in: 0...1, using: &random))
            : nil
        isAlone = (token.index / LifecycleKind.allCases.count) % 2 == 1
    }

    /// `owned` or `refunded` at `milliseconds`; nil before it was bought.
    public func status(at milliseconds: Int64) -> String? {
        guard purchaseMs <= milliseconds else { return nil }
        return refund.map { $0.atMs <= milliseconds } == true ? "refunded" : "owned"
    }

    /// Writes the entry as Apple lists a non-consumable at `now`: no expiry, no renewal fields.
    func write(to json: inout JSONWriter, at now: Int64) {
        json.beginObject()
        json.numberString("quantity", 1)
        json.string("product_id", Self.productID)
        json.string("transaction_id", transactionID)
        json.string("original_transaction_id", transactionID)
        json.date("purchase_date", purchaseMs)
        json.date("original_purchase_date", purchaseMs)
        if let refund, refund.atMs <= now {
            json.date("cancellation_date", refund.atMs)
            json.numberString("cancellation_reason", refund.reason)
        }
        json.boolString("is_trial_period", false)
        json.string("in_app_ownership_type", Ownership.purchased.rawValue)
        json.endObject()
    }
}
