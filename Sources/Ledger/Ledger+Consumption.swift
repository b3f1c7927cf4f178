import AppStore
import Foundation
import PostgresClient

/// What a CONSUMPTION_REQUEST notification says: which transaction a customer asked Apple to
/// refund, and when Apple signed the request (its 12 hours run from then).
public struct ConsumptionRequestNotice: Sendable, Equatable {
    /// The notification's (`v2:` + notificationUUID): a request is recorded once.
    public var dedupeKey: String
    public var app: String
    public var environment: AppStoreEnvironment
    public var transactionID: String
    public var originalTransactionID: String?
    public var subscriptionID: Int64?
    /// Apple's `type` of the transaction (`PurchaseKind`'s raw value).
    public var productType: String?
    public var familyShared: Bool
    /// Apple's `consumptionRequestReason`.
    public var reason: String?
    public var signedAt: Date

    public init(
        dedupeKey: String, app: String, environment: AppStoreEnvironment, transactionID: String, originalTransactionID: String?,
        subscriptionID: Int64?, productType: String?, familyShared: Bool, reason: String?, signedAt: Date
    ) {
        (self.dedupeKey, self.app, self.environment, self.transactionID) = (dedupeKey, app, environment, transactionID)
        (self.originalTransactionID, self.subscriptionID, self.productType) = (originalTransactionID, subscriptionID, productType)
        (self.familyShared, self.reason, self.signedAt) = (familyShared, reason, signedAt)
    }

    public var deadline: Date { signedAt.addingTimeInterval(Double(ConsumptionInformation.window.components.seconds)) }
}

/// A recorded consumption request and what became of it, for `subscriptions show` and the console.
public struct ConsumptionRequestRecord: Sendable, Equatable {
    public var id: Int64
    public var transactionID: String
    public var reason: String?
    public var signedAt: Date
    public var deadline: Date
    /// `pending`, `answered`, `unanswered` or `missed`.
    public var state: String
    public var unansweredReason: String?
    /// The ConsumptionRequest body Apple took, as JSON.
    public var answer: String?
    public var answeredAt: Date?
    public var attempts: Int
    public var lastError: String?
}

/// A pending request claimed to be answered now, with what the ledger knows of its purchase.
public struct DueConsumptionRequest: Sendable, Equatable {
    public var id: Int64
    public var app: String
    public var environment: AppStoreEnvironment
    public var transactionID: String
    public var deadline: Date
    public var facts: ConsumptionFacts
}

extension Ledger {
    /// Records a consumption request once (a copy of its notification adds nothing); one whose
    /// deadline passed before it came (found late by notification recovery) is recorded as missed.
    /// Returns its state, nil for a copy.
    @discardableResult
    public func recordConsumptionRequest(_ notice: ConsumptionRequestNotice, now: Date) throws -> String? {
        try connection.query("""
            INSERT INTO consumption_requests (dedupe_key, app, environment, transaction_id, original_transaction_id, subscription_id,
                product_type, family_shared, request_reason, signed_at, deadline, received_at, next_attempt_at, state)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, CASE WHEN $11 <= $12 THEN 'missed' ELSE 'pending' END)
            ON CONFLICT (dedupe_key) DO NOTHING RETURNING state
            """, [.text(notice.dedupeKey), .text(notice.app), .text(notice.environment.rawValue), .text(notice.transactionID),
                  notice.originalTransactionID.map { .text($0) } ?? .null, notice.subscriptionID.map { .int64($0) } ?? .null,
                  notice.productType.map { .text($0) } ?? .null, .bool(notice.familyShared), notice.reason.map { .text($0) } ?? .null,
                  .timestamptz(notice.signedAt), .timestamptz(notice.deadline), .timestamptz(now)]).first?["state"].text()
    }

    /// The app's account `accountID` consents (or withdraws its consent) to Apple being told how
    /// its purchases were used when it asks for a refund. `by`: who said so (the API token's name).
    public func setRefundConsent(app: String, accountID: String, consented: Bool, by: String) throws {
        try connection.execute("""
            INSERT INTO refund_consents (app, account_id, consented, changed_by) VALUES ($1, $2, $3, $4)
            ON CONFLICT (app, account_id) DO UPDATE SET consented = $3, changed_by = $4, changed_at = now()
            """, [.text(app), .text(accountID), .bool(consented), .text(by)])
    }

    /// The account's consent: nil when it never said.
    public func refundConsent(app: String, accountID: String) throws -> Bool? {
        try connection.query("SELECT consented FROM refund_consents WHERE app = $1 AND account_id = $2", [.text(app), .text(accountID)])
            .first?["consented"].bool()
    }

    /// Pending requests whose deadline passed unanswered become `missed`; returns how many.
    @discardableResult
    public func markMissedConsumptionRequests(now: Date) throws -> Int {
        try connection.query("""
            UPDATE consumption_requests SET state = 'missed' WHERE state = 'pending' AND deadline <= $1 RETURNING id
            """, [.timestamptz(now)]).count
    }

    /// Claims up to `limit` pending requests due by `now`, soonest deadline first, for `lease`
    /// (another process skips them meanwhile; one left unanswered comes back after it), with the
    /// facts of their purchases: the account's consent, whether the transaction's entitlement was
    /// active (in the ledger, not revoked) when Apple asked, and whether a free trial or an
    /// introductory offer came before it.
    public func claimDueConsumptionRequests(now: Date, limit: Int, lease: Duration) throws -> [DueConsumptionRequest] {
        try connection.query("""
            WITH claimed AS (
                UPDATE consumption_requests c SET attempts = c.attempts + 1, next_attempt_at = $1 + $3 * interval '1 millisecond'
                WHERE c.id IN (
                    SELECT id FROM consumption_requests WHERE state = 'pending' AND next_attempt_at <= $1 AND deadline > $1
                    ORDER BY deadline LIMIT $2 FOR UPDATE SKIP LOCKED)
                RETURNING c.*
            )
            SELECT c.id, c.app, c.environment, c.transaction_id, c.product_type, c.family_shared, c.deadline,
                COALESCE((SELECT r.consented FROM subscriptions s
                          JOIN refund_consents r ON r.app = s.app AND r.account_id = s.account_id
                          WHERE s.id = c.subscription_id), false) AS consented,
                EXISTS (SELECT 1 FROM transactions t WHERE t.transaction_id = c.transaction_id AND t.subscription_id = c.subscription_id
                        AND (t.purchased_at IS NULL OR t.purchased_at <= c.signed_at)
                        AND (t.cancelled_at IS NULL OR t.cancelled_at > c.signed_at)) AS delivered,
                EXISTS (SELECT 1 FROM transactions t WHERE t.subscription_id = c.subscription_id AND (t.is_trial OR t.is_intro_offer)
                        AND t.purchased_at <= COALESCE(
                            (SELECT x.purchased_at FROM transactions x WHERE x.transaction_id = c.transaction_id), c.signed_at))
                    AS sample_content
            FROM claimed c ORDER BY c.deadline
            """, [.timestamptz(now), .int64(Int64(limit)), .int64(Int64(lease.components.seconds * 1000))]).map { row in
            try DueConsumptionRequest(
                id: row["id"].int64() ?? 0, app: row["app"].text() ?? "",
                environment: AppStoreEnvironment(rawValue: row["environment"].text() ?? "") ?? .production,
                transactionID: row["transaction_id"].text() ?? "", deadline: row["deadline"].timestamptz() ?? now,
                facts: ConsumptionFacts(
                    kind: row["product_type"].text().flatMap(PurchaseKind.init(rawValue:)), familyShared: row["family_shared"].bool() ?? false,
                    consented: row["consented"].bool() ?? false, delivered: row["delivered"].bool() ?? false,
                    sampleContent: row["sample_content"].bool() ?? false))
        }
    }

    /// Apple took the answer `body` (a ConsumptionRequest).
    public func recordConsumptionAnswered(id: Int64, body: [UInt8], at now: Date) throws {
        try connection.execute("""
            UPDATE consumption_requests SET state = 'answered', answer = $2::jsonb, answered_at = $3, last_error = NULL WHERE id = $1
            """, [.int64(id), .text(String(decoding: body, as: UTF8.self)), .timestamptz(now)])
    }

    /// The request gets no answer, for `reason` (`ConsumptionWithheld`, or Apple's refusal).
    public func recordConsumptionUnanswered(id: Int64, reason: String) throws {
        try connection.execute(
            "UPDATE consumption_requests SET state = 'unanswered', unanswered_reason = $2 WHERE id = $1", [.int64(id), .text(reason)])
    }

    /// No answer came (Apple unavailable, 429, no leave from the gate): try again at `retryAt`,
    /// while the deadline lasts.
    public func recordConsumptionRetry(id: Int64, error: String, retryAt: Date) throws {
        try connection.execute(
            "UPDATE consumption_requests SET last_error = $2, next_attempt_at = $3 WHERE id = $1",
            [.int64(id), .text(error), .timestamptz(retryAt)])
    }

    /// The consumption requests about the subscription, newest first.
    public func consumptionRequests(subscriptionID: Int64) throws -> [ConsumptionRequestRecord] {
        try connection.query("""
            SELECT id, transaction_id, request_reason, signed_at, deadline, state, unanswered_reason, answer::text AS answer,
                answered_at, attempts, last_error
            FROM consumption_requests WHERE subscription_id = $1 ORDER BY signed_at DESC, id DESC
            """, [.int64(subscriptionID)]).map { row in
            try ConsumptionRequestRecord(
                id: row["id"].int64() ?? 0, transactionID: row["transaction_id"].text() ?? "", reason: row["request_reason"].text(),
                signedAt: row["signed_at"].timestamptz() ?? .distantPast, deadline: row["deadline"].timestamptz() ?? .distantPast,
                state: row["state"].text() ?? "", unansweredReason: row["unanswered_reason"].text(), answer: row["answer"].text(),
                answeredAt: row["answered_at"].timestamptz(), attempts: Int(row["attempts"].int64() ?? 0), lastError: row["last_error"].text())
        }
    }

    /// How many requests are pending with their deadline within `within` of `now`: what the alert watches.
    public func consumptionRequestsNearingDeadline(now: Date, within: Duration) throws -> Int {
        Int(try connection.query("""
            SELECT count(*) AS n FROM consumption_requests
            WHERE state = 'pending' AND deadline > $1 AND deadline <= $1 + $2 * interval '1 second'
            """, [.timestamptz(now), .int64(within.components.seconds)]).first?["n"].int64() ?? 0)
    }
}
