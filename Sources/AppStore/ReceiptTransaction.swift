/// One transaction as verifyReceipt describes it: an element of `latest_receipt_info`,
/// `latest_expired_receipt_info` or `receipt.in_app` (in iOS 6 responses, the `receipt` itself).
///
/// Every field but the two ids may be missing; a missing field is nil, never a guess.
public struct ReceiptTransaction: Sendable, Equatable {
    public internal(set) var transactionID: String
    public internal(set) var originalTransactionID: String
    public internal(set) var productID: String?
    public internal(set) var quantity: Int?
    public internal(set) var purchaseDate: Instant?
    /// For subscriptions, the first purchase of the original transaction; Apple keeps it when the
    /// customer re-subscribes after a lapse.
    public internal(set) var originalPurchaseDate: Instant?
    public internal(set) var expiresDate: Instant?
    /// Set when Apple refunded or revoked the transaction, or when an upgrade superseded it.
    public internal(set) var cancellationDate: Instant?
    /// 1: an issue with the app; 0: another reason. See `cancellationReasonMeaning(_:)`.
    public internal(set) var cancellationReason: Int?
    public internal(set) var isTrialPeriod: Bool?
    public internal(set) var isInIntroOfferPeriod: Bool?
    /// True when the customer upgraded to another product and this transaction was superseded.
    public internal(set) var isUpgraded: Bool?
    public internal(set) var webOrderLineItemID: String?
    public internal(set) var ownershipType: OwnershipType?
    public internal(set) var offerCodeRefName: String?
    public internal(set) var promotionalOfferID: String?
    public internal(set) var subscriptionGroupIdentifier: String?
    /// Whether an upgrade replaced this transaction: Apple's `is_upgraded`, or (where Apple does
    /// not send it, as in `receipt.in_app`) another transaction of the same subscription bought
    /// within a minute of this one's cancellation. Set by `markingSuperseded(_:)`.
    public internal(set) var isSuperseded = false

    /// Reads one entry (a signed transaction's too: `init(signed:)`); nil when it lacks
    /// `transaction_id` or `original_transaction_id`, without which it can be neither recorded nor
    /// attributed to a subscription.
    init?(_ fields: [String: JSONValue]) {
        guard let transactionID = fields.text("transaction_id"),
              let originalTransactionID = fields.text("original_transaction_id")
        else { return nil }
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        productID = fields.text("product_id")
        quantity = fields.int("quantity")
        purchaseDate = fields.instant("purchase_date")
        originalPurchaseDate = fields.instant("original_purchase_date")
        expiresDate = fields.instant("expires_date")
        cancellationDate = fields.instant("cancellation_date")
        cancellationReason = fields.int("cancellation_reason")
        isTrialPeriod = fields.flag("is_trial_period")
        isInIntroOfferPeriod = fields.flag("is_in_intro_offer_period")
        isUpgraded = fields.flag("is_upgraded")
        webOrderLineItemID = fields.text("web_order_line_item_id")
        ownershipType = fields.text("in_app_ownership_type").flatMap(OwnershipType.init(rawValue:))
        offerCodeRefName = fields.text("offer_code_ref_name")
        promotionalOfferID = fields.text("promotional_offer_id")
        subscriptionGroupIdentifier = fields.text("subscription_group_identifier")
    }

    /// Whether Apple took this transaction back (refund or revocation), as opposed to an upgrade
    /// superseding it, which also sets a cancellation date.
    var isRefunded: Bool { cancellationDate != nil && !isSuperseded }

    /// How close a successor's purchase must be to a cancellation for the two to be one upgrade.
    static let upgradeWindowMilliseconds: Int64 = 60_000

    /// One subscription's `entries` with `isSuperseded` set on those an upgrade replaced. A
    /// cancellation with a successor bought at the same moment is the upgrade's; one without is a
    /// refund. Apple documents `is_upgraded` only in `latest_receipt_info`, so the timing decides
    /// for entries read from `in_app`.
    static func markingSuperseded(_ entries: [ReceiptTransaction]) -> [ReceiptTransaction] {
        let purchases = entries.compactMap { entry in entry.purchaseDate.map { (entry.transactionID, $0.millisecondsSince1970) } }
        return entries.map { entry in
            var marked = entry
            let cancelled = entry.cancellationDate?.millisecondsSince1970
            marked.isSuperseded = entry.isUpgraded == true || cancelled.map { cancelled in
                purchases.contains { id, purchased in
                    id != entry.transactionID && abs(purchased - cancelled) <= upgradeWindowMilliseconds
                }
            } == true
            return marked
        }
    }
}

extension ReceiptTransaction: MergedFromRepeats {
    var repeatKey: String? { transactionID }

    static let fillable: [Fillable<ReceiptTransaction>] = [
        Fillable(\.productID), Fillable(\.quantity), Fillable(\.purchaseDate), Fillable(\.originalPurchaseDate), Fillable(\.expiresDate),
        Fillable(\.cancellationDate), Fillable(\.cancellationReason), Fillable(\.isTrialPeriod), Fillable(\.isInIntroOfferPeriod),
        Fillable(\.isUpgraded), Fillable(\.webOrderLineItemID), Fillable(\.ownershipType), Fillable(\.offerCodeRefName),
        Fillable(\.promotionalOfferID), Fillable(\.subscriptionGroupIdentifier),
    ]
}
