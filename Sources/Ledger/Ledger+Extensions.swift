import AppStore
import Foundation
import PostgresClient

/// A subscription as a renewal-date extension sees it: what Apple is asked about, and, when the
/// ledger's state says Apple would refuse it, why.
public struct ExtensionCandidate: Sendable, Equatable {
    /// Why Apple would refuse to extend a subscription, by what the ledger knows of it.
    public enum Ineligibility: String, Sendable {
        case unverified
        case expired
        case billingRetry = "billing_retry"
        case grace
        case freeOffer = "free_offer"
        case familyShared = "family_shared"
        case extendedTwice = "extended_twice"
    }

    public var id: Int64
    public var app: String
    public var originalTransactionID: String
    public var environment: AppStoreEnvironment
    public var productID: String?
    /// The current period's end, as last verified.
    public var expiresAt: Date?
    public var ineligible: Ineligibility?
}

extension ExtensionCandidate.Ineligibility: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unverified: "it was never verified: verify it first (receiptfleet verify ID)"
        case .expired: "it has expired (or was refunded or is invalid): Apple extends only a running period"
        case .billingRetry: "it is in billing retry: Apple extends only a paid, active period"
        case .grace: "it is in a grace period past its expiry: Apple extends only a paid, active period"
        case .freeOffer: "it is in a free offer period: Apple extends only a paid period"
        case .familyShared: "the customer has it through Family Sharing: Apple extends only the purchaser's"
        case .extendedTwice:
            "it had \(RenewalExtension.maximumPerWindow) extensions within \(RenewalExtension.windowDays) days, Apple's most"
        }
    }
}

extension Ledger {
    /// The subscriptions `ids`, as an extension at `now` sees them.
    public func extensionCandidates(ids: [Int64], now: Date) throws -> [ExtensionCandidate] {
        try extensionCandidates(where: "s.id = ANY($2::bigint[])", [.timestamptz(now), Self.idArray(ids)])
    }

    /// `app`'s subscriptions of `environment` whose current period is of `productID`, as the
    /// ledger last saw them: those Apple extends when asked to extend every active subscriber of the product.
    public func activeSubscribers(ofProduct productID: String, app: String, environment: AppStoreEnvironment, now: Date) throws
        -> [ExtensionCandidate]
    {
        try extensionCandidates(
            where: "s.app = $2 AND s.environment = $3 AND s.product_id = $4 AND s.status = 'active' AND s.expires_at > $1",
            [.timestamptz(now), .text(app), .text(environment.rawValue), .text(productID)])
    }

    /// Apple's rules read from the ledger, one place for one subscription and for a product's
    /// subscribers. Only granted extensions count toward Apple's two: one still unanswered may be
    /// asked again (a retry), and a third that slips through is Apple's to refuse (4030005).
    private func extensionCandidates(where condition: StaticString, _ parameters: [PostgresValue]) throws -> [ExtensionCandidate] {
        try connection.query("""
            SELECT s.id, s.app, s.original_transaction_id, s.environment, s.product_id, s.expires_at,
                CASE
                    WHEN s.status = 'unverified' THEN 'unverified'
                    WHEN s.status = 'in_billing_retry' THEN 'billing_retry'
                    WHEN s.status = 'in_grace' THEN 'grace'
                    WHEN s.status <> 'active' OR s.expires_at IS NULL OR s.expires_at <= $1 THEN 'expired'
                    WHEN s.is_trial THEN 'free_offer'
                    WHEN s.ownership = 'FAMILY_SHARED' THEN 'family_shared'
                    WHEN (SELECT count(*) FROM renewal_extensions e WHERE e.subscription_id = s.id AND e.state = 'extended'
                          AND e.requested_at > $1 - interval '\(RenewalExtension.windowDays) days') >= \(RenewalExtension.maximumPerWindow)
                        THEN 'extended_twice'
                END AS ineligible
            FROM subscriptions s WHERE \(condition) ORDER BY s.id
            """, parameters).map { row in
            try ExtensionCandidate(
                id: row["id"].int64() ?? 0, app: row["app"].text() ?? "",
                originalTransactionID: row["original_transaction_id"].text() ?? "",
                environment: AppStoreEnvironment(rawValue: row["environment"].text() ?? "") ?? .production,
                productID: row["product_id"].text(), expiresAt: row["expires_at"].timestamptz(),
                ineligible: row["ineligible"].text().flatMap(ExtensionCandidate.Ineligibility.init(rawValue:)))
        }
    }

    /// The identifier of an extension of the same subscription (or, with `productID`, of the
    /// same product's subscribers), days and reason that was asked and never answered: asking
    /// again with it is a retry, which Apple applies once.
    public func unansweredExtension(subscriptionID: Int64?, productID: String?, days: Int, reason: ExtendReason) throws -> String? {
        try connection.query("""
            SELECT request_identifier FROM renewal_extensions
            WHERE state = 'asked' AND days = $1 AND reason = $2
                AND (subscription_id = $3 OR $3 IS NULL) AND product_id IS NOT DISTINCT FROM $4
            ORDER BY requested_at DESC LIMIT 1
            """, [.int64(Int64(days)), .int64(Int64(reason.rawValue)), subscriptionID.map { .int64($0) } ?? .null,
                  productID.map { .text($0) } ?? .null]).first?["request_identifier"].text()
    }

    /// Notes that Apple is being asked to extend `subscriptionIDs` (one request, `requestIdentifier`),
    /// before the call: a call that gets no answer leaves the rows asked, for a retry to find.
    public func recordExtensionAsked(
        subscriptionIDs: [Int64], requestIdentifier: String, productID: String?, days: Int, reason: ExtendReason
    ) throws {
        try connection.execute("""
            INSERT INTO renewal_extensions (subscription_id, request_identifier, product_id, days, reason)
            SELECT unnest($1::bigint[]), $2, $3, $4, $5
            ON CONFLICT (subscription_id, request_identifier) DO NOTHING
            """, [Self.idArray(subscriptionIDs), .text(requestIdentifier), productID.map { .text($0) } ?? .null,
                  .int64(Int64(days)), .int64(Int64(reason.rawValue))])
    }

    /// Apple's answer to request `requestIdentifier`: granted (until `expiresAt`, when Apple said),
    /// or refused with why. Returns the subscriptions the request was about.
    @discardableResult
    public func recordExtensionAnswer(requestIdentifier: String, expiresAt: Date?, refusal: String?) throws -> [Int64] {
        try connection.query("""
            UPDATE renewal_extensions SET state = $2, expires_at = $3, refusal = $4
            WHERE request_identifier = $1 RETURNING subscription_id
            """, [.text(requestIdentifier), .text(refusal == nil ? "extended" : "refused"), expiresAt.map { .timestamptz($0) } ?? .null,
                  refusal.map { .text($0) } ?? .null]).compactMap { try $0["subscription_id"].int64() }
    }
}
