// The App Store Server API signs a transaction (`JWSTransactionDecodedPayload`) and a
// subscription's renewal plans (`JWSRenewalInfoDecodedPayload`) with camelCase names, dates as
// milliseconds and flags as numbers. Read here into the receipt model verifyReceipt's answers fill,
// by the same tolerant rules (a missing or surprising field is nil), so that both backends feed
// one analysis and announce the same events.

/// `offerType` in both payloads: how the customer came to the price they pay.
enum SignedOfferType: Int {
    case introductory = 1
    case promotional = 2
    case offerCode = 3
    case winBack = 4
}

extension ReceiptTransaction {
    /// Reads a signed transaction; nil without `transactionId` or `originalTransactionId`.
    init?(signed fields: [String: JSONValue]) {
        guard let transactionID = fields.text("transactionId"),
              let originalTransactionID = fields.text("originalTransactionId")
        else { return nil }
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        productID = fields.text("productId")
        quantity = fields.int("quantity")
        purchaseDate = fields.instant("purchaseDate")
        originalPurchaseDate = fields.instant("originalPurchaseDate")
        expiresDate = fields.instant("expiresDate")
        // A refund or a revocation; verifyReceipt calls both a cancellation.
        cancellationDate = fields.instant("revocationDate")
        cancellationReason = fields.int("revocationReason")
        isUpgraded = fields.flag("isUpgraded")
        webOrderLineItemID = fields.text("webOrderLineItemId")
        ownershipType = fields.text("inAppOwnershipType").flatMap(OwnershipType.init(rawValue:))
        subscriptionGroupIdentifier = fields.text("subscriptionGroupIdentifier")
        let offer = fields.int("offerType").flatMap(SignedOfferType.init(rawValue:))
        (isTrialPeriod, isInIntroOfferPeriod) = Self.introductoryPeriod(offer, discount: fields.text("offerDiscountType"))
        offerCodeRefName = offer == .offerCode ? fields.text("offerIdentifier") : nil
        promotionalOfferID = offer == .promotional ? fields.text("offerIdentifier") : nil
    }

    /// verifyReceipt's two flags: a free trial is `is_trial_period`, a paid introductory price
    /// `is_in_intro_offer_period`. An introductory offer of unknown kind (payloads before Apple
    /// added `offerDiscountType`) leaves both unknown.
    private static func introductoryPeriod(_ offer: SignedOfferType?, discount: String?) -> (trial: Bool?, intro: Bool?) {
        guard offer == .introductory else { return (false, false) }
        switch discount {
        case "FREE_TRIAL": return (true, false)
        case "PAY_AS_YOU_GO", "PAY_UP_FRONT": return (false, true)
        default: return (nil, nil)
        }
    }
}

extension PendingRenewal {
    /// Reads signed renewal info.
    init(signed fields: [String: JSONValue]) {
        originalTransactionID = fields.text("originalTransactionId")
        productID = fields.text("productId")
        autoRenewProductID = fields.text("autoRenewProductId")
        autoRenewStatus = fields.flag("autoRenewStatus")
        expirationIntent = fields.int("expirationIntent")
        isInBillingRetryPeriod = fields.flag("isInBillingRetryPeriod")
        gracePeriodExpiresDate = fields.instant("gracePeriodExpiresDate")
        // 0: not yet answered, 1: accepted, as verifyReceipt's `price_consent_status`.
        priceConsentStatus = fields.int("priceIncreaseStatus")
        let offer = fields.int("offerType").flatMap(SignedOfferType.init(rawValue:))
        offerCodeRefName = offer == .offerCode ? fields.text("offerIdentifier") : nil
        promotionalOfferID = offer == .promotional ? fields.text("offerIdentifier") : nil
    }
}
