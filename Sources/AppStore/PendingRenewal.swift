/// What Apple plans for a subscription's next renewal: an element of `pending_renewal_info`, or
/// the renewal fields that iOS 6 responses carry at the top level.
public struct PendingRenewal: Sendable, Equatable {
    public internal(set) var originalTransactionID: String?
    public internal(set) var productID: String?
    /// The product the subscription will renew into; differs from `productID` when the customer
    /// scheduled a downgrade or crossgrade.
    public internal(set) var autoRenewProductID: String?
    /// Whether the subscription will renew at the end of the current period.
    public internal(set) var autoRenewStatus: Bool?
    /// Why the subscription expired, 1–5; see `expirationIntentMeaning(_:)`.
    public internal(set) var expirationIntent: Int?
    /// Whether Apple is still trying to charge for a renewal that failed.
    public internal(set) var isInBillingRetryPeriod: Bool?
    /// Present while the subscription is in a billing grace period: access continues until then.
    public internal(set) var gracePeriodExpiresDate: Instant?
    public internal(set) var priceConsentStatus: Int?
    public internal(set) var offerCodeRefName: String?
    public internal(set) var promotionalOfferID: String?

    /// The renewal fields Apple names the same way in both places they appear.
    static let fieldNames = [
        "auto_renew_product_id", "auto_renew_status", "expiration_intent",
        "is_in_billing_retry_period", "grace_period_expires_date", "grace_period_expires_date_ms",
        "price_consent_status",
    ]

    init(_ fields: [String: JSONValue]) {
        originalTransactionID = fields.text("original_transaction_id")
        productID = fields.text("product_id")
        autoRenewProductID = fields.text("auto_renew_product_id")
        autoRenewStatus = fields.flag("auto_renew_status")
        expirationIntent = fields.int("expiration_intent")
        isInBillingRetryPeriod = fields.flag("is_in_billing_retry_period")
        gracePeriodExpiresDate = fields.instant("grace_period_expires_date")
        priceConsentStatus = fields.int("price_consent_status")
        offerCodeRefName = fields.text("offer_code_ref_name")
        promotionalOfferID = fields.text("promotional_offer_id")
    }

    /// This renewal with its missing fields taken from `other`, a repeat for the same subscription.
    func filling(from other: PendingRenewal) -> PendingRenewal {
        var merged = self
        merged.productID = productID ?? other.productID
        merged.autoRenewProductID = autoRenewProductID ?? other.autoRenewProductID
        merged.autoRenewStatus = autoRenewStatus ?? other.autoRenewStatus
        merged.expirationIntent = expirationIntent ?? other.expirationIntent
        merged.isInBillingRetryPeriod = isInBillingRetryPeriod ?? other.isInBillingRetryPeriod
        merged.gracePeriodExpiresDate = gracePeriodExpiresDate ?? other.gracePeriodExpiresDate
        merged.priceConsentStatus = priceConsentStatus ?? other.priceConsentStatus
        merged.offerCodeRefName = offerCodeRefName ?? other.offerCodeRefName
        merged.promotionalOfferID = promotionalOfferID ?? other.promotionalOfferID
        return merged
    }

    /// `renewals` with repeats for one original_transaction_id merged into the first, in
    /// first-seen order. Renewals without an id are kept as they are.
    static func deduplicated(_ renewals: [PendingRenewal]) -> [PendingRenewal] {
        var merged: [PendingRenewal] = []
        var position: [String: Int] = [:]
        for renewal in renewals {
            if let id = renewal.originalTransactionID, let index = position[id] {
                merged[index] = merged[index].filling(from: renewal)
            } else {
                if let id = renewal.originalTransactionID { position[id] = merged.count }
                merged.append(renewal)
            }
        }
        return merged
    }
}
