import Foundation
import PostgresClient

/// The ledger's numbers for `receiptfleet status`.
public struct LedgerCounts: Sendable, Equatable {
    /// Subscriptions per status column value, `unverified` included; statuses with none are absent.
    public var subscriptionsByStatus: [String: Int] { Self.total(subscriptionsByApp) }
    /// The same, for each app (`subscriptions.app`); apps with none are absent.
    public var subscriptionsByApp: [String: [String: Int]]

    /// The apps' counts by status, added up.
    public static func total(_ byApp: [String: [String: Int]]) -> [String: Int] {
        byApp.values.reduce(into: [:]) { total, app in total.merge(app, uniquingKeysWith: +) }
    }
    /// Subscriptions whose next check is due.
    public var dueNow: Int
    /// Events written at or after `since`, per type.
    public var eventsByType: [String: Int]
    /// Events the relay has not published yet.
    public var unpublishedEvents: Int
    /// How long the oldest unpublished event has waited (the outbox lag); nil when none waits.
    public var oldestUnpublishedAge: TimeInterval?
}

extension Ledger {
    /// Counts in two queries. The per-status and per-type counts read whole tables: fine for a
    /// status command, too heavy to poll every few seconds on a large fleet (`outboxBacklog` is not).
    public func counts(now: Date, since: Date) throws -> LedgerCounts {
        let row = try connection.query("""
            SELECT
                (SELECT coalesce(jsonb_object_agg(app, statuses), '{}') FROM
                    (SELECT app, jsonb_object_agg(status, n) AS statuses FROM
                        (SELECT app, status, count(*) AS n FROM subscriptions GROUP BY app, status) AS s
                    GROUP BY app) AS a) AS by_app,
                (SELECT count(*) FROM subscriptions WHERE next_check_at <= $1) AS due,
                (SELECT coalesce(jsonb_object_agg(type, n), '{}') FROM
                    (SELECT type, count(*) AS n FROM events WHERE created_at >= $2 GROUP BY type) AS e) AS by_type
            """, [.timestamptz(now), .timestamptz(since)])[0]
        let decoder = JSONDecoder()
        let outbox = try outboxBacklog(now: now)
        return try LedgerCounts(
            subscriptionsByApp: decoder.decode([String: [String: Int]].self, from: row["by_app"].jsonb() ?? Data("{}".utf8)),
            dueNow: Int(row["due"].int64() ?? 0),
            eventsByType: decoder.decode([String: Int].self, from: row["by_type"].jsonb() ?? Data("{}".utf8)),
            unpublishedEvents: outbox.unpublished,
            oldestUnpublishedAge: outbox.oldestAge)
    }

    /// The events the relay has not published yet: cheap enough to read at every metrics scrape,
    /// since both parts use the partial index on unpublished events.
    public func outboxBacklog(now: Date) throws -> OutboxBacklog {
        let row = try connection.query("""
            SELECT
                (SELECT count(*) FROM events WHERE published_at IS NULL) AS unpublished,
                (SELECT greatest(0, extract(epoch FROM $1 - created_at))::float8 FROM events
                    WHERE published_at IS NULL ORDER BY seq LIMIT 1) AS oldest_age
            """, [.timestamptz(now)])[0]
        return OutboxBacklog(unpublished: Int(try row["unpublished"].int64() ?? 0), oldestAge: try row["oldest_age"].double())
    }
}

/// The outbox's backlog: what `receiptfleet status` and the metrics call the outbox lag.
public struct OutboxBacklog: Sendable, Equatable {
    /// Events the relay has not published yet.
    public var unpublished: Int
    /// How long the oldest of them has waited, in seconds; nil when none waits.
    public var oldestAge: TimeInterval?
}

extension Ledger {
    /// Attempts at or after `since` that Apple answered and that were analysed, per app (through
    /// the index on the attempt time, so cheap enough for every scrape).
    public func verifiedCounts(since: Date) throws -> [String: Int] {
        let rows = try connection.query("""
            SELECT s.app, count(*) AS n FROM verifications v JOIN subscriptions s ON s.id = v.subscription_id
            WHERE v.attempted_at >= $1 AND v.outcome = 'verified' GROUP BY s.app
            """, [.timestamptz(since)])
        var counts: [String: Int] = [:]
        for row in rows { counts[try row["app"].text() ?? ""] = Int(try row["n"].int64() ?? 0) }
        return counts
    }

    /// verifyReceipt attempts at or after `since`, per Apple status ("none" when Apple gave none:
    /// timeouts, error pages), for the status mix.
    public func appleStatusMix(since: Date) throws -> [String: Int] {
        let rows = try connection.query("""
            SELECT coalesce(apple_status::text, 'none') AS status, count(*) AS attempts
            FROM verifications WHERE attempted_at >= $1 GROUP BY 1
            """, [.timestamptz(since)])
        var mix: [String: Int] = [:]
        for row in rows { mix[try row["status"].text() ?? "none"] = Int(try row["attempts"].int64() ?? 0) }
        return mix
    }
}
