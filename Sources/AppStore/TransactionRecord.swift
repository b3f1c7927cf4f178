/// One transaction of a subscription, for a transactions table keyed by `transactionID`.
public struct TransactionRecord: Sendable, Codable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String?
    public var purchasedAt: Instant?
    public var expiresAt: Instant?
    public var cancelledAt: Instant?
    public var cancellationReason: Int?
    public var isTrial: Bool?
    public var isIntroOffer: Bool?
    public var isUpgraded: Bool?
    public var webOrderLineItemID: String?
    public var ownership: OwnershipType?
    public var offerCodeRefName: String?

    public init(_ entry: ReceiptTransaction) {
        transactionID = entry.transactionID
        originalTransactionID = entry.originalTransactionID
        productID = entry.productID
        purchasedAt = entry.purchaseDate
        expiresAt = entry.expiresDate
        cancelledAt = entry.cancellationDate
        cancellationReason = entry.cancellationReason
        isTrial = entry.isTrialPeriod
        isIntroOffer = entry.isInIntroOfferPeriod
        isUpgraded = entry.isSuperseded ? true : entry.isUpgraded
        webOrderLineItemID = entry.webOrderLineItemID
        ownership = entry.ownershipType
        offerCodeRefName = entry.offerCodeRefName
    }

    enum CodingKeys: String, CodingKey {
        case transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case productID = "product_id"
        case purchasedAt = "purchased_at"
        case expiresAt = "expires_at"
        case cancelledAt = "cancelled_at"
        case cancellationReason = "cancellation_reason"
        case isTrial = "is_trial"
        case isIntroOffer = "is_intro_offer"
        case isUpgraded = "is_upgraded"
        case webOrderLineItemID = "web_order_line_item_id"
        case ownership
        case offerCodeRefName = "offer_code_ref_name"
    }
}
