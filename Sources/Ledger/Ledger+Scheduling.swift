import AppStore
import Foundation
import PostgresClient

/// One page of due subscriptions, in check order.
public struct DuePage: Sendable, Equatable {
    public var subscriptions: [DueSubscription]
    /// Where the next page starts; nil when this page was not full, and so the last.
    public var next: DueCursor?

    public var ids: [Int64] { subscriptions.map(\.id) }
}

public struct DueSubscription: Sendable, Equatable {
    public var id: Int64
    public var nextCheckAt: Date
}

/// A position in the due order, (next_check_at, id): the last row of a page.
public struct DueCursor: Sendable, Hashable {
    public var nextCheckAt: Date
    public var id: Int64
}

/// What a worker needs to verify one subscription.
public struct LoadedSubscription: Sendable {
    public var id: Int64
    public var originalTransactionID: String
    public var app: String
    /// The app's customer the subscription is linked to; its receipt's purchases are theirs too.
    public var accountID: String?
    public var environment: AppStoreEnvironment
    /// The service that verifies it; nil follows the deployment's default.
    public var backend: VerificationBackend?
    /// The receipt to send to Apple; nil if none was ever stored. It prints redacted.
    public var receipt: ReceiptData?
    /// The state the last analysis left, without the receipt (that is `receipt`); nil before the first.
    public var state: SubscriptionState?
    /// Pass it back with the analysis (`VerificationWrite.analysed`), for the compare-and-set.
    public var version: Int64
    public var lastVerifiedAt: Date?
    public var nextCheckAt: Date?
    /// A registration queued while Apple could not be asked, whose receipt Apple has not judged yet
    /// (the least tried, then the oldest); it is asked about before the subscription's own receipt.
    public var claim: QueuedClaim?
}

/// A queued registration's receipt, waiting for Apple's judgement (`Ledger.judgeClaims`).
public struct QueuedClaim: Sendable {
    public var receipt: ReceiptData
    /// Calls that could not judge it so far.
    public var attempts: Int
    /// How many claims of the subscription wait, this one included.
    public var waiting: Int
}

extension Ledger {
    /// Subscriptions due for a check at `now`, oldest due first, `limit` at a time. Pass the page's
    /// `next` as `after` to read the following page: each due subscription comes exactly once, also
    /// when many share one `next_check_at`. Subscriptions that wait for a notification (refunded,
    /// invalid) have no `next_check_at` and never appear.
    /// - Parameter environment: only subscriptions of this environment; nil for all.
    /// - Parameter unchangedSince: leave out subscriptions written at or after this moment (the
    ///   database's clock, `databaseTime()`): a scheduler pass that started then must not find again
    ///   a subscription a worker verified while it paged (its next check moved later, but may still
    ///   be due), nor enqueue it a second time once that job was acked. The next pass finds it.
    public func dueSubscriptions(
        now: Date, after cursor: DueCursor? = nil, limit: Int, environment: AppStoreEnvironment? = nil, unchangedSince: Date? = nil
    ) throws -> DuePage {
        var sql = "SELECT id, next_check_at FROM subscriptions WHERE next_check_at IS NOT NULL AND next_check_at <= $1"
        var parameters: [PostgresValue] = [.timestamptz(now), .int64(Int64(limit))]
        if let unchangedSince {
            sql += " AND updated_at < $\(parameters.count + 1)"
            parameters.append(.timestamptz(unchangedSince))
        }
        if let cursor {
            // A row comparison, so the index on (next_check_at, id) starts right after the cursor.
            sql += " AND (next_check_at, id) > ($\(parameters.count + 1), $\(parameters.count + 2))"
            parameters += [.timestamptz(cursor.nextCheckAt), .int64(cursor.id)]
        }
        if let environment {
            sql += " AND environment = $\(parameters.count + 1)"
            parameters.append(.text(environment.rawValue))
        }
        sql += " ORDER BY next_check_at, id LIMIT $2"
        let due = try connection.query(sql, parameters).map { row in
            DueSubscription(id: try row["id"].int64() ?? 0, nextCheckAt: try row["next_check_at"].timestamptz() ?? now)
        }
        let next = due.count < limit ? nil : due.last.map { DueCursor(nextCheckAt: $0.nextCheckAt, id: $0.id) }
        return DuePage(subscriptions: due, next: next)
    }

    /// The receipts, stored states and versions of `ids`, in one query, in the order of `ids`;
    /// ids that no longer exist are left out.
    public func loadForVerification(ids: [Int64]) throws -> [LoadedSubscription] {
        let rows = try connection.query(Self.loadForVerification, [Self.idArray(ids)])
        return try rows.map { row in
            let id = try row["id"].int64() ?? 0
            return try LoadedSubscription(
                id: id,
                originalTransactionID: row["original_transaction_id"].text() ?? "",
                app: row["app"].text() ?? "",
                accountID: row["account_id"].text(),
                environment: AppStoreEnvironment(rawValue: row["environment"].text() ?? "") ?? .production,
                backend: row["backend"].text().flatMap(VerificationBackend.init(rawValue:)),
                receipt: row["receipt"].text().map(ReceiptData.init(base64:)),
                state: Self.decodeState(row["state"], subscriptionID: id),
                version: row["version"].int64() ?? 0,
                lastVerifiedAt: row["last_verified_at"].timestamptz(),
                nextCheckAt: row["next_check_at"].timestamptz(),
                claim: row["claim_receipt"].text().map {
                    QueuedClaim(receipt: ReceiptData(base64: $0), attempts: Int(try row["claim_attempts"].int64() ?? 0),
                                waiting: Int(try row["claims_waiting"].int64() ?? 1))
                })
        }
    }

    /// The subscriptions of a batch with their receipts, in the order asked; prepared, since every
    /// batch runs it.
    static let loadForVerification = PreparedStatement(name: "load_for_verification", sql: """
        SELECT s.id, s.original_transaction_id, s.app, s.account_id, s.environment, s.backend, r.receipt, s.state, s.version,
            s.last_verified_at, s.next_check_at, c.receipt AS claim_receipt, c.attempts AS claim_attempts,
            c.waiting AS claims_waiting
        FROM unnest($1::bigint[]) WITH ORDINALITY AS wanted (id, position)
        JOIN subscriptions s ON s.id = wanted.id
        LEFT JOIN receipts r ON r.subscription_id = s.id
        LEFT JOIN LATERAL (
            SELECT receipt, attempts, count(*) OVER () AS waiting FROM account_claims
            WHERE subscription_id = s.id AND resolved_at IS NULL AND receipt IS NOT NULL
            ORDER BY attempts, claimed_at, id LIMIT 1
        ) c ON true
        ORDER BY wanted.position
        """)

    /// The database's clock: the moment to compare its `now()`-stamped columns with.
    public func databaseTime() throws -> Date {
        try connection.query("SELECT now() AS t").first?["t"].timestamptz() ?? Date()
    }
}
