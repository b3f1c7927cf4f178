/// Where a subscription stands, as of one verification.
public enum SubscriptionStatus: String, Sendable, Codable, CaseIterable {
    /// Paid up: the latest period has not ended.
    case active
    /// A renewal failed, Apple is retrying, and access continues until the grace period ends.
    case inGrace = "in_grace"
    /// A renewal failed and Apple is retrying; no access meanwhile.
    case inBillingRetry = "in_billing_retry"
    /// Ended: turned off, or Apple stopped retrying. The expiration intent says why.
    case expired
    /// Apple took the latest transaction back (refund or revocation).
    case refunded
    /// The receipt failed verification for good (see `SubscriptionAnalyzer.permanentFailure`).
    case invalid

    /// A customer in these states has no subscription any more.
    var hasLapsed: Bool { self == .expired || self == .refunded }
    /// A renewal failed and Apple is still trying to charge.
    var isRetryingBilling: Bool { self == .inGrace || self == .inBillingRetry }
}

/// When and why Apple took a transaction back.
public struct Cancellation: Sendable, Codable, Equatable {
    public var cancelledAt: Instant
    /// 1: an issue with the app; 0: another reason. See `cancellationReasonMeaning(_:)`.
    public var reason: Int?

    public init(cancelledAt: Instant, reason: Int?) {
        self.cancelledAt = cancelledAt
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case cancelledAt = "cancelled_at"
        case reason
    }
}

/// One subscription (one original_transaction_id) as the fleet stores it. Its JSON form uses
/// stable snake_case keys and ISO 8601 times: it is stored, and printed by
/// `receiptfleet inspect --state FILE`.
///
/// `latestReceipt` is a secret; it prints redacted.
public struct SubscriptionState: Sendable, Codable, Equatable {
    public var originalTransactionID: String
    public var status: SubscriptionStatus
    public var productID: String?
    public var latestTransactionID: String?
    public var purchasedAt: Instant?
    public var expiresAt: Instant?
    public var autoRenew: Bool?
    public var autoRenewProductID: String?
    public var expirationIntent: Int?
    public var gracePeriodExpiresAt: Instant?
    public var isTrial: Bool?
    public var isIntroOffer: Bool?
    public var environment: AppStoreEnvironment?
    public var ownership: OwnershipType?
    /// When the current continuous run of paid periods began; moves forward on re-subscription.
    public var chainStartedAt: Instant?
    /// The latest transaction's refund or revocation, if any.
    public var cancellation: Cancellation?
    /// Every transaction of this subscription whose refund the fleet has seen, so that a refund
    /// of an earlier period found late is announced once, and a reversed one noticed. nil in
    /// states stored before the fleet kept it.
    public var refundedTransactionIDs: [String]?
    /// When the fleet last saw every refunded transaction of this subscription (`VerifyReceiptResponse.showsEveryRefund`):
    /// a Server API verification reads them only every few days (`RefundCheck`).
    /// nil in states stored before the fleet kept it.
    public var refundsReadAt: Instant?
    /// `subscription_group_identifier`: Apple lists it only in `latest_receipt_info`, so it is kept.
    public var subscriptionGroupIdentifier: String?
    /// `price_consent_status` while a price increase awaits the customer: 0 not yet, 1 agreed.
    public var priceConsentStatus: Int?
    /// The offer code or promotional offer the next renewal is bought with, once the customer
    /// redeemed it (the renewal info's `offer_code_ref_name`, `promotional_offer_id`).
    public var renewalOfferCodeRefName: String?
    public var renewalPromotionalOfferID: String?
    /// When the subscription became `invalid`; it is looked at again for a while after.
    public var invalidSince: Instant?
    /// Replaced only when a response carries `latest_receipt`.
    public var latestReceipt: ReceiptData?
    public var verifiedAt: Instant

    public init(originalTransactionID: String, status: SubscriptionStatus, verifiedAt: Instant) {
        self.originalTransactionID = originalTransactionID
        self.status = status
        self.verifiedAt = verifiedAt
    }

    enum CodingKeys: String, CodingKey {
        case originalTransactionID = "original_transaction_id"
        case status
        case productID = "product_id"
        case latestTransactionID = "latest_transaction_id"
        case purchasedAt = "purchased_at"
        case expiresAt = "expires_at"
        case autoRenew = "auto_renew"
        case autoRenewProductID = "auto_renew_product_id"
        case expirationIntent = "expiration_intent"
        case gracePeriodExpiresAt = "grace_period_expires_at"
        case isTrial = "is_trial"
        case isIntroOffer = "is_intro_offer"
        case environment
        case ownership
        case chainStartedAt = "chain_started_at"
        case cancellation
        case refundedTransactionIDs = "refunded_transaction_ids"
        case refundsReadAt = "refunds_read_at"
        case subscriptionGroupIdentifier = "subscription_group_identifier"
        case priceConsentStatus = "price_consent_status"
        case renewalOfferCodeRefName = "renewal_offer_code_ref_name"
        case renewalPromotionalOfferID = "renewal_promotional_offer_id"
        case invalidSince = "invalid_since"
        case latestReceipt = "latest_receipt"
        case verifiedAt = "verified_at"
    }
}
