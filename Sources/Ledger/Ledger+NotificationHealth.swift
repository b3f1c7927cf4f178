import AppStore
import Foundation
import PostgresClient

/// What the ledger holds of one app's recent notifications and changes (`NotificationHealth`
/// judges them).
public struct NotificationReading: Sendable, Equatable {
    public var app: String
    /// Changes to its subscriptions the fleet learned of, by notification or by check.
    public var changes: Int
    /// V2 notifications about its subscriptions that reached `serve` (or recovery).
    public var notified: Int

    public init(app: String, changes: Int, notified: Int) {
        (self.app, self.changes, self.notified) = (app, changes, notified)
    }
}

extension Ledger {
    /// Each app's changes and V2 notifications since `since`, for apps with either.
    public func notificationReadings(since: Date) throws -> [NotificationReading] {
        let rows = try connection.query("""
            WITH changes AS (
                SELECT s.app, count(*) AS n FROM events e JOIN subscriptions s ON s.id = e.subscription_id
                WHERE e.created_at >= $1 AND e.type IN (SELECT jsonb_array_elements_text($2)) GROUP BY s.app),
            notified AS (
                SELECT s.app, count(*) AS n FROM notifications n JOIN subscriptions s ON s.id = n.subscription_id
                WHERE n.received_at >= $1 AND n.version = 2 GROUP BY s.app)
            SELECT coalesce(c.app, n.app) AS app, coalesce(c.n, 0) AS changes, coalesce(n.n, 0) AS notified
            FROM changes c FULL JOIN notified n ON n.app = c.app ORDER BY 1
            """, [.timestamptz(since), try Self.jsonb(Self.announcedChanges)])
        return try rows.map {
            NotificationReading(app: try $0["app"].text() ?? "", changes: Int(try $0["changes"].int64() ?? 0),
                                notified: Int(try $0["notified"].int64() ?? 0))
        }
    }

    /// The changes Apple announces with a notification of their own (docs/events.md).
    static let announcedChanges = [
        "renewed", "resubscribed", "plan_changed", "auto_renew_disabled", "auto_renew_enabled", "plan_change_scheduled",
        "refunded", "refund_reversed", "renewal_extended", "billing_retry_started", "grace_period_ended", "billing_recovered",
        "expired", "price_increase_consent",
    ]

    /// Brings the active subscriptions of `apps` not checked in the last 20 hours due now: while an
    /// app's notifications do not arrive, its subscriptions are checked nightly, as before
    /// notifications. Returns how many were brought forward.
    @discardableResult
    public func checkNightly(apps: [String], now: Date) throws -> Int {
        guard !apps.isEmpty else { return 0 }
        return try connection.query("""
            UPDATE subscriptions SET next_check_at = $2
            WHERE app IN (SELECT jsonb_array_elements_text($1)) AND status = 'active' AND next_check_at > $2
              AND (last_verified_at IS NULL OR last_verified_at < $2 - interval '20 hours')
            RETURNING id
            """, [try Self.jsonb(apps), .timestamptz(now)]).count
    }
}
