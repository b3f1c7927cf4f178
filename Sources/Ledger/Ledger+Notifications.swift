import AppStore
import Foundation
import PostgresClient

/// An App Store Server Notification as the ledger keeps it: what it was about, never its body.
public struct NotificationRecord: Sendable {
    public enum Outcome: String, Sendable {
        /// A high-priority verification job is due for the subscription.
        case queued
        /// Its signed data told the whole change, and was applied: no call to Apple was needed.
        case settled
        /// For an environment this deployment does not accept: acknowledged, nothing done.
        case ignoredEnvironment = "ignored_environment"
        /// About a subscription the ledger does not have, with no receipt to add it by.
        case unknownSubscription = "unknown_subscription"
        /// About no subscription at all (a TEST notification, say).
        case noSubscription = "no_subscription"
    }

    /// `v2:` + notificationUUID, or `v1:sha256:` + the hash of the body's JSON, keys sorted.
    public var dedupeKey: String
    public var version: Int
    public var notificationType: String
    /// What Apple says the type means, or `unknown`.
    public var meaning: String
    public var subtype: String?
    public var environment: String?
    public var originalTransactionID: String?
    public var subscriptionID: Int64?
    public var outcome: Outcome
    /// Apple's `signedDate` (V2).
    public var signedAt: Date?
    /// Brought in from Apple's notification history rather than sent to serve.
    public var recovered = false

    public init(
        dedupeKey: String, version: Int, notificationType: String, meaning: String, subtype: String? = nil, environment: String? = nil,
        originalTransactionID: String? = nil, subscriptionID: Int64? = nil, outcome: Outcome
    ) {
        self.dedupeKey = dedupeKey
        self.version = version
        self.notificationType = notificationType
        self.meaning = meaning
        self.subtype = subtype
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.subscriptionID = subscriptionID
        self.outcome = outcome
    }
}

/// What recording a notification found.
public struct RecordedNotification: Sendable, Equatable {
    public var id: Int64
    /// False when the same notification was recorded before (Apple sent it again).
    public var isNew: Bool
    /// The subscription whose verification job is still to be enqueued (`markJobEnqueued` has not
    /// been called for it); nil when there is none (not queued, or enqueued already).
    public var jobPendingFor: Int64?
}

extension Ledger {
    /// Records `notification` once per dedupe key, and says whether its verification job is still
    /// to be enqueued. Every copy of a queued notification whose job was not noted as enqueued
    /// gets `jobPendingFor`: the caller enqueues it (idempotently, by the notification's id) and
    /// then calls `markJobEnqueued`. A caller that dies in between leaves the job pending, so
    /// Apple's next copy finishes the work instead of being answered "duplicate".
    public func record(_ notification: NotificationRecord) throws -> RecordedNotification {
        let inserted = try connection.query("""
            INSERT INTO notifications (dedupe_key, version, notification_type, subtype, environment,
                original_transaction_id, subscription_id, outcome, meaning, signed_at, recovered)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (dedupe_key) DO NOTHING
            RETURNING id
            """, [
                .text(notification.dedupeKey), .int64(Int64(notification.version)), .text(notification.notificationType),
                notification.subtype.map(PostgresValue.text) ?? .null,
                notification.environment.map(PostgresValue.text) ?? .null,
                notification.originalTransactionID.map(PostgresValue.text) ?? .null,
                notification.subscriptionID.map(PostgresValue.int64) ?? .null,
                .text(notification.outcome.rawValue), .text(notification.meaning),
                notification.signedAt.map(PostgresValue.timestamptz) ?? .null, .bool(notification.recovered),
            ])
        let row = try connection.query("""
            SELECT id, CASE WHEN outcome = 'queued' AND job_enqueued_at IS NULL THEN subscription_id END AS pending
            FROM notifications WHERE dedupe_key = $1
            """, [.text(notification.dedupeKey)]).first
        return RecordedNotification(
            id: try row?["id"].int64() ?? 0, isNew: !inserted.isEmpty, jobPendingFor: try row?["pending"].int64())
    }

    /// Whether a notification with `dedupeKey` is recorded.
    public func knowsNotification(dedupeKey: String) throws -> Bool {
        try !connection.query("SELECT 1 FROM notifications WHERE dedupe_key = $1", [.text(dedupeKey)]).isEmpty
    }

    /// Notes that the notification's signed data settled the change: no job is due for it, and
    /// its copies need nothing more.
    public func markSettled(notificationID: Int64) throws {
        try connection.execute("UPDATE notifications SET outcome = 'settled' WHERE id = $1 AND outcome = 'queued'", [.int64(notificationID)])
    }

    /// Notes that the notification's verification job is in the queue: its copies need nothing more.
    public func markJobEnqueued(notificationID: Int64) throws {
        try connection.execute(
            "UPDATE notifications SET job_enqueued_at = now() WHERE id = $1 AND job_enqueued_at IS NULL",
            [.int64(notificationID)])
    }

    /// Notifications received since `since` that asked for a verification their subscription has not
    /// had since: their job was lost with Redis, or the process that recorded them died before
    /// enqueueing it. Oldest first; the scheduler enqueues them again (each at most once per
    /// notification, by its once-key), so a Redis loss loses no notification.
    public func notificationsAwaitingVerification(
        since: Date, environment: AppStoreEnvironment? = nil
    ) throws -> [(notificationID: Int64, subscriptionID: Int64)] {
        var sql = """
            SELECT n.id, n.subscription_id FROM notifications n JOIN subscriptions s ON s.id = n.subscription_id
            WHERE n.outcome = 'queued' AND n.received_at >= $1
              AND (s.last_verified_at IS NULL OR s.last_verified_at < n.received_at)
            """
        var parameters: [PostgresValue] = [.timestamptz(since)]
        if let environment {
            sql += " AND s.environment = $2"
            parameters.append(.text(environment.rawValue))
        }
        return try connection.query(sql + " ORDER BY n.received_at, n.id", parameters).map { row in
            (try row["id"].int64() ?? 0, try row["subscription_id"].int64() ?? 0)
        }
    }
}
