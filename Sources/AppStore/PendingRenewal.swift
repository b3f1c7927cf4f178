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

}

/// Repeats for one original_transaction_id merge into the first; renewals without an id are kept as they are.
extension PendingRenewal: MergedFromRepeats {
    var repeatKey: String? { originalTransactionID }

    static let fillable: [Fillable<PendingRenewal>] = [
        Fillable(\.productID), Fillable(\.autoRenewProductID), Fillable(\.autoRenewStatus), Fillable(\.expirationIntent),
        Fillable(\.isInBillingRetryPeriod), Fillable(\.gracePeriodExpiresDate), Fillable(\.priceConsentStatus),
        Fillable(\.offerCodeRefName), Fillable(\.promotionalOfferID),
    ]
}
