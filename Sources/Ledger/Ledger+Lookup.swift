import AppStore
import Foundation
import PostgresClient

/// One row of `subscriptions`, as support and the CLI see it. Never the receipt.
public struct SubscriptionRecord: Sendable {
    public var id: Int64
    public var app: String
    public var originalTransactionID: String
    public var accountID: String?
    public var environment: AppStoreEnvironment
    /// The service that verifies it; nil follows the deployment's default.
    public var backend: VerificationBackend?
    /// nil until the first analysis (the column says `unverified`).
    public var status: SubscriptionStatus?
    /// Everything the last analysis found (the receipt left out).
    public var state: SubscriptionState?
    public var lastVerifiedAt: Date?
    public var lastOutcome: AttemptOutcome?
    /// nil: checked only when a notification asks for it.
    public var nextCheckAt: Date?
    public var version: Int64
    public var createdAt: Date
    public var updatedAt: Date
}

/// A subscription with its history, for `receiptfleet subscriptions show ID`.
public struct SubscriptionDetail: Sendable {
    public var subscription: SubscriptionRecord
    /// Every transaction Apple has shown, oldest purchase first.
    public var transactions: [TransactionRecord]
    /// The latest events, newest first.
    public var events: [StoredEvent]
    /// The latest verification attempts, newest first.
    public var verifications: [VerificationAttempt]
}

/// An event as the outbox holds it.
public struct StoredEvent: Sendable {
    /// The outbox order.
    public var seq: Int64
    public var event: SubscriptionEvent
    public var createdAt: Date
    /// nil until the relay has published it.
    public var publishedAt: Date?
}

extension Ledger {
    public func subscription(id: Int64) throws -> SubscriptionRecord? {
        try records(where: "id = $1", [.int64(id)]).first
    }

    /// The subscriptions with this original_transaction_id, one per app that has it.
    public func subscriptions(originalTransactionID: String) throws -> [SubscriptionRecord] {
        try records(where: "original_transaction_id = $1", [.text(originalTransactionID)])
    }

    /// The subscription with all its transactions and its latest events and verifications; nil
    /// when there is no such subscription. Reads no receipt, so roles without access to
    /// `receipts` can call it.
    public func detail(id: Int64, events eventLimit: Int = 50, verifications verificationLimit: Int = 20) throws
        -> SubscriptionDetail?
    {
        guard let subscription = try subscription(id: id) else { return nil }
        let transactions = try connection.query("""
            SELECT jsonb_build_object(
                'transaction_id', transaction_id, 'original_transaction_id', original_transaction_id,
                'product_id', product_id, 'purchased_at', \(Self.instant("purchased_at")),
                'expires_at', \(Self.instant("expires_at")), 'cancelled_at', \(Self.instant("cancelled_at")),
                'cancellation_reason', cancellation_reason, 'is_trial', is_trial, 'is_intro_offer', is_intro_offer,
                'is_upgraded', is_upgraded, 'web_order_line_item_id', web_order_line_item_id, 'ownership', ownership,
                'offer_code_ref_name', offer_code_ref_name) AS record
            FROM transactions WHERE subscription_id = $1 ORDER BY purchased_at, transaction_id
            """, [.int64(id)]).map { try Self.decode(TransactionRecord.self, $0["record"]) }
        let events = try connection.query("""
            SELECT seq, created_at, published_at, jsonb_build_object(
                'id', id, 'type', type, 'original_transaction_id', original_transaction_id,
                'occurred_at', \(Self.instant("occurred_at")), 'payload', payload) AS event
            FROM events WHERE subscription_id = $1 ORDER BY seq DESC LIMIT $2
            """, [.int64(id), .int64(Int64(eventLimit))]).map { row in
            try StoredEvent(
                seq: row["seq"].int64() ?? 0, event: Self.decode(SubscriptionEvent.self, row["event"]),
                createdAt: row["created_at"].timestamptz() ?? .distantPast,
                publishedAt: row["published_at"].timestamptz())
        }
        let verifications = try connection.query("""
            SELECT attempted_at, outcome, environment, apple_status, http_status, latency_ms, error, run_id, backend
            FROM verifications WHERE subscription_id = $1 ORDER BY attempted_at DESC, id DESC LIMIT $2
            """, [.int64(id), .int64(Int64(verificationLimit))]).map { row in
            try VerificationAttempt(
                attemptedAt: row["attempted_at"].timestamptz() ?? .distantPast,
                outcome: AttemptOutcome(rawValue: row["outcome"].text() ?? ""),
                environment: row["environment"].text().flatMap(AppStoreEnvironment.init(rawValue:)),
                appleStatus: row["apple_status"].int64().map { Int($0) },
                httpStatus: row["http_status"].int64().map { Int($0) },
                latencyMilliseconds: row["latency_ms"].int64().map { Int($0) },
                error: row["error"].text(), runID: row["run_id"].text(),
                backend: row["backend"].text().flatMap(VerificationBackend.init(rawValue:)))
        }
        return SubscriptionDetail(
            subscription: subscription, transactions: transactions, events: events, verifications: verifications)
    }

    func records(where condition: StaticString, _ parameters: [PostgresValue]) throws -> [SubscriptionRecord] {
        try connection.query("""
            SELECT id, app, original_transaction_id, account_id, environment, backend, status, state, last_verified_at,
                last_outcome, next_check_at, version, created_at, updated_at
            FROM subscriptions WHERE \(condition) ORDER BY id
            """, parameters).map { row in
            let id = try row["id"].int64() ?? 0
            return try SubscriptionRecord(
                id: id, app: row["app"].text() ?? "",
                originalTransactionID: row["original_transaction_id"].text() ?? "",
                accountID: row["account_id"].text(),
                environment: AppStoreEnvironment(rawValue: row["environment"].text() ?? "") ?? .production,
                backend: row["backend"].text().flatMap(VerificationBackend.init(rawValue:)),
                status: row["status"].text().flatMap(SubscriptionStatus.init(rawValue:)),
                state: Self.decodeState(row["state"], subscriptionID: id),
                lastVerifiedAt: row["last_verified_at"].timestamptz(),
                lastOutcome: row["last_outcome"].text().map(AttemptOutcome.init(rawValue:)),
                nextCheckAt: row["next_check_at"].timestamptz(), version: row["version"].int64() ?? 0,
                createdAt: row["created_at"].timestamptz() ?? .distantPast,
                updatedAt: row["updated_at"].timestamptz() ?? .distantPast)
        }
    }

    /// A timestamptz column in `Instant`'s JSON spelling, `2024-02-01T00:00:00.000Z`.
    private static func instant(_ column: StaticString) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ cell: PostgresCell) throws -> T {
        try JSONDecoder().decode(type, from: try cell.jsonb() ?? Data("null".utf8))
    }
}

extension Ledger {
    /// Ids looked up per query by `appsAndBackends(of:)`.
    static let placesPage = 10_000

    /// Each subscription's app and backend (nil: it follows the deployment's default), for those of
    /// `ids` the ledger has: what the console's Queues page breaks the queued jobs down by.
    public func appsAndBackends(of ids: some Collection<Int64>) throws -> [Int64: (app: String, backend: VerificationBackend?)] {
        var found: [Int64: (app: String, backend: VerificationBackend?)] = [:]
        let sorted = Array(Set(ids)).sorted()
        for start in stride(from: 0, to: sorted.count, by: Self.placesPage) {
            let page = Array(sorted[start..<min(start + Self.placesPage, sorted.count)])
            let rows = try connection.query("SELECT id, app, backend FROM subscriptions WHERE id = ANY($1::bigint[])", [Self.idArray(page)])
            for row in rows {
                guard let id = try row["id"].int64(), let app = try row["app"].text() else { continue }
                found[id] = (app, try row["backend"].text().flatMap(VerificationBackend.init(rawValue:)))
            }
        }
        return found
    }
}
