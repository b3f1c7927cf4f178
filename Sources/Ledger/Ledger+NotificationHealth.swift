import AppStore
import Foundation
import PostgresClient

/// What the ledger holds of one app's recent notifications, changes and checks (`NotificationHealth`
/// judges them, and the console shows them).
public struct NotificationReading: Sendable, Equatable {
    public var app: String
    /// Changes to its subscriptions the fleet learned of, by notification or by check.
    public var changes: Int
    /// V2 notifications about its subscriptions that reached `serve` (or recovery).
    public var notified: Int
    /// Of which signed within the day and brought in from Apple's history by recovery: Apple's
    /// sends did not arrive.
    public var recovered = 0
    /// Seconds from Apple signing a notification's change within the day to the fleet knowing it
    /// (the signed data settling it, or the check it queued), 99th percentile; nil without any.
    public var freshnessP99Seconds: Double?
    /// Checks of its subscriptions that asked Apple (applied notifications ask nothing).
    public var checks = 0
    /// Its subscriptions.
    public var subscriptions = 0

    public init(app: String, changes: Int, notified: Int) {
        (self.app, self.changes, self.notified) = (app, changes, notified)
    }
}

extension Ledger {
    /// Each app's changes, V2 notifications and checks over the last `window`, for apps with any
    /// subscription. The window ends at `databaseNow` for what the database stamped (changes,
    /// notifications' arrival) and at `now`, the fleet's clock, for what the fleet stamped (checks)
    /// and Apple signed: the same moment but under a shifted clock.
    public func notificationReadings(within window: TimeInterval, databaseNow: Date, now: Date) throws -> [NotificationReading] {
        let rows = try connection.query("""
            WITH watched AS (SELECT app, count(*) AS n FROM subscriptions GROUP BY app),
            changes AS (
                SELECT s.app, count(*) AS n FROM events e JOIN subscriptions s ON s.id = e.subscription_id
                WHERE e.created_at >= $1 AND e.type IN (SELECT jsonb_array_elements_text($2)) GROUP BY s.app),
            notified AS (
                -- Recovered and fresh: of the changes Apple signed within the day (a first recovery brings
                -- in weeks of history, which says nothing of today's sends).
                SELECT s.app, count(*) AS n, count(*) FILTER (WHERE n.recovered AND n.signed_at >= $3) AS recovered,
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM coalesce(k.at, $4) - n.signed_at)::float8)
                           FILTER (WHERE n.signed_at >= $3) AS p99
                FROM notifications n JOIN subscriptions s ON s.id = n.subscription_id
                LEFT JOIN LATERAL (
                    -- Known: the signed data applied (settled), or the first check after Apple signed it.
                    SELECT min(v.attempted_at) AS at FROM verifications v
                    WHERE v.subscription_id = n.subscription_id AND v.attempted_at >= n.signed_at
                      AND (n.outcome = 'settled' OR v.run_id IS DISTINCT FROM 'notification')) k ON n.signed_at IS NOT NULL
                WHERE n.received_at >= $1 AND n.version = 2 AND n.outcome IN ('settled', 'queued') GROUP BY s.app),
            checks AS (
                SELECT s.app, count(*) AS n FROM verifications v JOIN subscriptions s ON s.id = v.subscription_id
                WHERE v.attempted_at >= $3 AND v.run_id IS DISTINCT FROM 'notification' GROUP BY s.app)
            SELECT w.app, w.n AS subscriptions, coalesce(c.n, 0) AS changes, coalesce(n.n, 0) AS notified,
                   coalesce(n.recovered, 0) AS recovered, n.p99, coalesce(k.n, 0) AS checks
            FROM watched w LEFT JOIN changes c ON c.app = w.app LEFT JOIN notified n ON n.app = w.app
            LEFT JOIN checks k ON k.app = w.app ORDER BY 1
            """, [.timestamptz(databaseNow - window), try Self.jsonb(Self.announcedChanges), .timestamptz(now - window), .timestamptz(now)])
        return try rows.map {
            var reading = NotificationReading(
                app: try $0["app"].text() ?? "", changes: Int(try $0["changes"].int64() ?? 0), notified: Int(try $0["notified"].int64() ?? 0))
            reading.recovered = Int(try $0["recovered"].int64() ?? 0)
            reading.freshnessP99Seconds = try $0["p99"].double()
            reading.checks = Int(try $0["checks"].int64() ?? 0)
            reading.subscriptions = Int(try $0["subscriptions"].int64() ?? 0)
            return reading
        }
    }

    /// The changes Apple announces with a notification of their own (docs/events.md).
    static let announcedChanges = [
        "renewed", "resubscribed", "plan_changed", "auto_renew_disabled", "auto_renew_enabled", "plan_change_scheduled",
        "refunded", "refund_reversed", "renewal_extended", "billing_retry_started", "grace_period_ended", "billing_recovered",
        "expired", "price_increase_consent", "offer_redeemed",
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
