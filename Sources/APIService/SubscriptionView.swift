import AppStore
import Foundation
import Ledger

/// A subscription as the API shows it (docs/openapi.yaml `Subscription`): the stored state, and
/// the entitlement an app grants by it. Never the receipt. Its optional fields are null when
/// absent, so every documented field is always there; only `history` is left out when not asked for.
struct SubscriptionView: Encodable, Sendable {
    struct History: Encodable, Sendable {
        var transactions: [TransactionRecord]
        /// The latest events, newest first.
        var events: [SubscriptionEvent]
    }

    var id: Int64
    var originalTransactionID: String
    @NullWhenAbsent var accountID: String?
    var environment: String
    /// `unverified` until the fleet's first verification.
    var status: String
    @NullWhenAbsent var productID: String?
    @NullWhenAbsent var expiresAt: Instant?
    @NullWhenAbsent var autoRenew: Bool?
    @NullWhenAbsent var autoRenewProductID: String?
    @NullWhenAbsent var gracePeriodExpiresAt: Instant?
    var entitlement: Entitlement
    @NullWhenAbsent var lastVerifiedAt: Instant?
    var history: History?

    /// A subscription an account claims and Apple has not yet shown to be its own: its id and
    /// nothing of its state or owner, no entitlement.
    static func pending(_ record: SubscriptionRecord, now: Date) -> SubscriptionView {
        var view = SubscriptionView(record, now: now)
        view.accountID = nil
        view.status = "pending"
        (view.productID, view.expiresAt, view.autoRenew, view.autoRenewProductID) = (nil, nil, nil, nil)
        (view.gracePeriodExpiresAt, view.lastVerifiedAt) = (nil, nil)
        view.entitlement = Entitlement(active: false, until: nil)
        return view
    }

    init(_ record: SubscriptionRecord, history: History? = nil, now: Date) {
        id = record.id
        originalTransactionID = record.originalTransactionID
        accountID = record.accountID
        environment = record.environment.rawValue
        status = record.status?.rawValue ?? "unverified"
        let state = record.state
        productID = state?.productID
        expiresAt = state?.expiresAt
        autoRenew = state?.autoRenew
        autoRenewProductID = state?.autoRenewProductID
        gracePeriodExpiresAt = state?.gracePeriodExpiresAt
        entitlement = record.entitlement(at: now)
        lastVerifiedAt = record.lastVerifiedAt.map(Instant.init)
        self.history = history
    }

    enum CodingKeys: String, CodingKey {
        case id, environment, status, entitlement, history
        case originalTransactionID = "original_transaction_id"
        case accountID = "account_id"
        case productID = "product_id"
        case expiresAt = "expires_at"
        case autoRenew = "auto_renew"
        case autoRenewProductID = "auto_renew_product_id"
        case gracePeriodExpiresAt = "grace_period_expires_at"
        case lastVerifiedAt = "last_verified_at"
    }
}
