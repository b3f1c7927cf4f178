import AppStore
import Foundation
import Ledger

/// A one-time purchase as the API shows it (docs/openapi.yaml `Purchase`): a lifetime unlock or a
/// non-renewing subscription, and the entitlement it grants: active until refunded, with no end.
/// Its optional fields are null when absent, so every documented field is always there.
struct PurchaseView: Encodable, Sendable {
    var id: Int64
    var transactionID: String
    var originalTransactionID: String
    @NullWhenAbsent var accountID: String?
    @NullWhenAbsent var productID: String?
    @NullWhenAbsent var quantity: Int?
    var environment: String
    var status: String
    @NullWhenAbsent var purchasedAt: Instant?
    @NullWhenAbsent var cancelledAt: Instant?
    @NullWhenAbsent var cancellationReason: Int?
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
}
