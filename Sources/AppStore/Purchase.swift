/// A one-time purchase: a non-consumable (such as a "lifetime" unlock) or a non-renewing
/// subscription. It has no renewal chain, so no subscription state: the customer owns it until
/// Apple refunds it.
public struct Purchase: Sendable, Encodable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String?
    public var purchasedAt: Instant?
    public var quantity: Int?
    public var ownership: OwnershipType?
    public var environment: AppStoreEnvironment?
    /// Set while Apple has the purchase refunded (or revoked).
    public var cancellation: Cancellation?

    public init(
        transactionID: String, originalTransactionID: String, productID: String? = nil, purchasedAt: Instant? = nil,
        quantity: Int? = nil, ownership: OwnershipType? = nil, environment: AppStoreEnvironment? = nil,
        cancellation: Cancellation? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.purchasedAt = purchasedAt
        self.quantity = quantity
        self.ownership = ownership
        self.environment = environment
        self.cancellation = cancellation
    }

    public var status: PurchaseStatus { cancellation == nil ? .owned : .refunded }

    enum CodingKeys: String, CodingKey {
        case transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case productID = "product_id"
        case purchasedAt = "purchased_at"
        case quantity, ownership, environment, cancellation, status
    }

    /// Writes every field, absent values as null, and the status the fields imply.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transactionID, forKey: .transactionID)
        try container.encode(originalTransactionID, forKey: .originalTransactionID)
        try container.encode(productID, forKey: .productID)
        try container.encode(purchasedAt, forKey: .purchasedAt)
        try container.encode(quantity, forKey: .quantity)
        try container.encode(ownership, forKey: .ownership)
        try container.encode(environment, forKey: .environment)
        try container.encode(cancellation, forKey: .cancellation)
        try container.encode(status, forKey: .status)
    }
}

/// Where a one-time purchase stands. A purchase grants access while `owned`.
public enum PurchaseStatus: String, Sendable, Codable, CaseIterable {
    case owned
    case refunded
}
