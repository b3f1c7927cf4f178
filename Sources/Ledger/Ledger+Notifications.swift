import PostgresClient

/// An App Store Server Notification as the ledger keeps it: what it was about, never its body.
public struct NotificationRecord: Sendable {
    public enum Outcome: String, Sendable {
        /// A high-priority verification job is due for the subscription.
        case queued
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
    /// The subscription whose verification job this caller must enqueue now, having claimed the
    /// job for itself; nil when there is none to enqueue (not queued, or already enqueued).
    public var claimedJobFor: Int64?
}

extension Ledger {
    /// Records `notification` once per dedupe key, and claims its verification job: of all the
    /// copies of one queued notification, exactly one caller gets `claimedJobFor` (unless it gives
    /// the claim back with `releaseJobClaim` because the enqueue failed).
    public func record(_ notification: NotificationRecord) throws -> RecordedNotification {
        let inserted = try connection.query("""
            INSERT INTO notifications (dedupe_key, version, notification_type, subtype, environment,
                original_transaction_id, subscription_id, outcome, meaning)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (dedupe_key) DO NOTHING
            RETURNING id
            """, [
                .text(notification.dedupeKey), .int64(Int64(notification.version)), .text(notification.notificationType),
                notification.subtype.map(PostgresValue.text) ?? .null,
                notification.environment.map(PostgresValue.text) ?? .null,
                notification.originalTransactionID.map(PostgresValue.text) ?? .null,
                notification.subscriptionID.map(PostgresValue.int64) ?? .null,
                .text(notification.outcome.rawValue), .text(notification.meaning),
            ])
        let isNew = !inserted.isEmpty
        let claimed = try connection.query("""
            UPDATE notifications SET job_enqueued_at = now()
            WHERE dedupe_key = $1 AND outcome = 'queued' AND job_enqueued_at IS NULL AND subscription_id IS NOT NULL
            RETURNING id, subscription_id
            """, [.text(notification.dedupeKey)])
        if let row = claimed.first {
            return RecordedNotification(id: try row["id"].int64() ?? 0, isNew: isNew, claimedJobFor: try row["subscription_id"].int64())
        }
        let existing = try connection.query("SELECT id FROM notifications WHERE dedupe_key = $1", [.text(notification.dedupeKey)])
        return RecordedNotification(id: try existing.first?["id"].int64() ?? 0, isNew: isNew, claimedJobFor: nil)
    }

    /// Gives back a job claim whose enqueue failed, so the next copy of the notification tries again.
    public func releaseJobClaim(notificationID: Int64) throws {
        try connection.execute("UPDATE notifications SET job_enqueued_at = NULL WHERE id = $1", [.int64(notificationID)])
    }
}
