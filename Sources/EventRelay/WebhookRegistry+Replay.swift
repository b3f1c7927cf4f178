import AppStore
import Foundation
import PostgresClient

/// What a replay queued for its endpoint.
public struct WebhookReplay: Sendable, Equatable {
    /// Deliveries queued: events the endpoint never had, and events it had that go again.
    public var queued: Int
    /// Of which it had been sent before (delivered, or failed for good).
    public var again: Int
    /// Pages of events walked, each its own short transaction.
    public var pages: Int

    public init(queued: Int = 0, again: Int = 0, pages: Int = 0) {
        (self.queued, self.again, self.pages) = (queued, again, pages)
    }
}

extension WebhookRegistry {
    /// Delivers again, to endpoint `id` alone, the published events recorded at or after `since`
    /// that it subscribes to (and, when `eventTypes` names some, of those types): a delivery for
    /// each event it never had (an endpoint added later), and a delivered or failed one made
    /// pending again with its attempts reset. Deliveries still pending are left as they are.
    /// Other endpoints are not touched. Events are walked in `seq` order, `pageSize` at a time,
    /// each page its own short transaction; `afterEachPage` hears the totals so far. The ledger
    /// keeps events after the Redis stream has dropped them, so a replay reaches further back.
    @discardableResult
    public func replay(
        endpoint id: Int64, since: Date, eventTypes: [String] = [], pageSize: Int = 5_000,
        afterEachPage: (WebhookReplay) -> Void = { _ in }
    ) throws -> WebhookReplay {
        let unknown = eventTypes.filter { SubscriptionEventType(rawValue: $0) == nil }
        guard unknown.isEmpty else { throw WebhookError.unknownEventTypes(unknown) }
        guard let endpoint = try list().first(where: { $0.id == id }) else { throw WebhookError.unknownEndpoint(id) }
        guard endpoint.isEnabled else { throw WebhookError.disabledEndpoint(id) }
        var total = WebhookReplay()
        var after: Int64 = 0
        // No event is older than the fleet; a time before 1970 (Date.distantPast) is out of PostgreSQL's range.
        let since = max(since, Date(timeIntervalSince1970: 0))
        while true {
            let row = try database.query(Self.replayPage, [
                .int64(id), .timestamptz(since), .int64(after), .text(EventSQL.arrayLiteral(eventTypes)), .int64(Int64(max(pageSize, 1))),
            ])[0]
            guard let last = try row["last_seq"].int64() else { return total }
            after = last
            total.queued += Int(try row["queued"].int64() ?? 0)
            total.again += Int(try row["again"].int64() ?? 0)
            total.pages += 1
            afterEachPage(total)
        }
    }

    /// $1 the endpoint, $2 since, $3 the last seq of the page before, $4 the types asked for ('{}':
    /// all), $5 the page size. An upsert per event: `xmax <> 0` tells a row updated from one inserted.
    private static let replayPage = """
        WITH page AS (
            SELECT e.id, e.seq FROM events e JOIN webhook_endpoints w ON w.id = $1
            WHERE e.seq > $3 AND e.published_at IS NOT NULL AND e.created_at >= $2
              AND (w.event_types = '{}' OR e.type = ANY (w.event_types))
              AND ($4::text[] = '{}' OR e.type = ANY ($4::text[]))
            ORDER BY e.seq LIMIT $5
        ), queued AS (
            INSERT INTO webhook_deliveries (endpoint_id, event_id) SELECT $1, id FROM page
            ON CONFLICT (endpoint_id, event_id) DO UPDATE
                SET state = 'pending', attempts = 0, next_attempt_at = now(), last_status = NULL, last_error = NULL,
                    delivered_at = NULL, leased_until = NULL
                WHERE webhook_deliveries.state <> 'pending'
            RETURNING (xmax <> 0) AS again
        )
        SELECT (SELECT max(seq) FROM page) AS last_seq, (SELECT count(*) FROM queued) AS queued,
               (SELECT count(*) FROM queued WHERE again) AS again
        """
}
