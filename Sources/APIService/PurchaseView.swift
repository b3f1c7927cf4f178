import AppStore
import Foundation
import Ledger

/// A one-time purchase as the API shows it (docs/openapi.yaml `Purchase`): a lifetime unlock or a
/// non-renewing subscription, and the entitlement it grants: active until refunded, with no end.
struct PurchaseView: Encodable, Sendable {
    var id: Int64
    var transactionID: String
    var originalTransactionID: String
    var accountID: String?
    var productID: String?
    var quantity: Int?
    var environment: String
    var status: String
    var purchasedAt: Instant?
    var cancelledAt: Instant?
    var cancellationReason: Int?
    var entitlement: Entitlement
    var lastVerifiedAt: Instant

    init(_ record: PurchaseRecord) {
        let purchase = record.purchase
        id = record.id
        transactionID = purchase.transactionID
        originalTransactionID = purchase.originalTransactionID
        accountID = record.accountID
        productID = purchase.productID
        quantity = purchase.quantity
        environment = (purchase.environment ?? .production).rawValue
        status = purchase.status.rawValue
        purchasedAt = purchase.purchasedAt
        cancelledAt = purchase.cancellation?.cancelledAt
        cancellationReason = purchase.cancellation?.reason
        entitlement = Entitlement(active: purchase.status == .owned, until: nil)
        lastVerifiedAt = Instant(record.lastVerifiedAt)
    }

    enum CodingKeys: String, CodingKey {
        case id, quantity, environment, status, entitlement
        case transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case accountID = "account_id"
        case productID = "product_id"
        case purchasedAt = "purchased_at"
        case cancelledAt = "cancelled_at"
        case cancellationReason = "cancellation_reason"
        case lastVerifiedAt = "last_verified_at"
    }

    /// Encodes optionals as null rather than leaving them out, so every documented field is always there.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(transactionID, forKey: .transactionID)
        try container.encode(originalTransactionID, forKey: .originalTransactionID)
        try container.encode(accountID, forKey: .accountID)
        try container.encode(productID, forKey: .productID)
        try container.encode(quantity, forKey: .quantity)
        try container.encode(environment, forKey: .environment)
        try container.encode(status, forKey: .status)
        try container.encode(purchasedAt, forKey: .purchasedAt)
        try container.encode(cancelledAt, forKey: .cancelledAt)
        try container.encode(cancellationReason, forKey: .cancellationReason)
        try container.encode(entitlement, forKey: .entitlement)
        try container.encode(lastVerifiedAt, forKey: .lastVerifiedAt)
    }
}
