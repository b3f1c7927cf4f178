import Foundation
import Lanes
import PostgresClient
import RedisClient

/// Publishes the outbox (the ledger's `events` table) to the Redis stream `{rf}:events` and creates
/// each event's webhook deliveries.
///
/// Each round is one PostgreSQL transaction: claim unpublished events, XADD them in `seq` order,
/// mark them published, create their webhook deliveries, commit. Several relays may run at once
/// (each on its own thread with its own connections); every event is published at least once, in
/// the normal case exactly once, and the events of one subscription (or one-time purchase) always in `seq` order.
///
/// How the order survives several relays: claims use `FOR UPDATE SKIP LOCKED`, so a relay never
/// waits for another, and a claimed event is published only if no earlier unpublished event of its
/// subscription lies outside the claim (another relay holds it). Such events stay unpublished until
/// the relay holding the earlier ones commits. See docs/events.md for why this, not advisory locks.
///
/// A crash between XADD and COMMIT publishes those events again on the next round: consumers
/// de-duplicate by the event id.
public final class OutboxRelay {
    /// The PostgreSQL channel migration 2's trigger notifies on every insert into `events`.
    public static let notificationChannel = "receiptfleet_events"

    public let configuration: RelayConfiguration
    private let database: PostgresConnection
    private let redis: RedisConnection
    /// Whether `database` is subscribed to `notificationChannel` (it stays so across reconnects).
    private var isListening = false

    /// A relay that publishes through `database` and `redis`, which it uses from the calling thread.
    public init(
        database: PostgresConnection, redis: RedisConnection, configuration: RelayConfiguration = RelayConfiguration()
    ) throws(RelayError) {
        try configuration.validate()
        self.database = database
        self.redis = redis
        self.configuration = configuration
    }

    /// Publishes up to `limit` events (the configured batch size by default) in one transaction and
    /// returns how many it published. Events another relay holds, and later events of their
    /// subscriptions, are left for a later round.
    @discardableResult
    public func runOnce(limit: Int? = nil) throws -> Int {
        try publishBatch(limit: limit ?? configuration.batchSize).published
    }

    /// Publishes until `stop` is set: a round whenever events are committed (woken by NOTIFY), and
    /// at least every `pollInterval`. A round that fails is reported to `onError` and tried again
    /// after `pollInterval`; the clients reconnect by themselves. `onPublished` hears how many
    /// events each round that published any made durable in the stream (for metrics).
    public func run(
        until stop: StopSignal, onError: (any Error) -> Void = { _ in }, onPublished: (Int) -> Void = { _ in }
    ) {
        while !stop.isSet {
            do {
                // Listening before looking means no event committed from now on can be missed.
                if !isListening {
                    try database.listen(Self.notificationChannel)
                    isListening = true
                }
                let batch = try publishBatch(limit: configuration.batchSize)
                if batch.published > 0 {
                    onPublished(batch.published)
                    continue
                }
                // Events held back behind another relay's claim are free once it commits, which
                // notifies nobody: look again soon rather than after a whole poll interval.
                try waitForEvents(upTo: batch.deferred > 0 ? Self.deferredRetryDelay : configuration.pollInterval, stop)
            } catch {
                onError(error)
                stop.sleep(configuration.pollInterval)
            }
        }
    }

    private static let deferredRetryDelay: Duration = .milliseconds(20)

    /// Returns when a notification arrives, `duration` passes, or `stop` is set.
    private func waitForEvents(upTo duration: Duration, _ stop: StopSignal) throws {
        let deadline = ContinuousClock.now + duration
        while !stop.isSet {
            let remaining = deadline - .now
            guard remaining > .zero else { return }
            let timeout = min(remaining, .milliseconds(50))
            if !(try database.waitForNotifications(timeout: timeout)).isEmpty { return }
        }
    }

    /// What one round did: events published, and claimed events held back for their order.
    struct Batch {
        var published: Int
        var deferred: Int
    }

    private func publishBatch(limit: Int) throws -> Batch {
        try database.transaction { database in
            let claimed = try database.query(Self.claim, [.int64(Int64(max(limit, 0)))])
            let publishable = try claimed.filter { try $0["publishable"].bool() == true }
            guard !publishable.isEmpty else { return Batch(published: 0, deferred: claimed.count) }

            let oldest = Date().addingTimeInterval(-configuration.retention.seconds)
            let minimumID = String(Int64(oldest.timeIntervalSince1970 * 1_000))
            let commands = try publishable.map { event in
                try Self.xadd(event, to: configuration.streamKey, trimmingBefore: minimumID)
            }
            for reply in try redis.pipeline(commands) {
                if case .error(let message) = reply { throw RedisError.server(message) }
            }

            let ids = try publishable.map { try $0["id"].text() ?? "" }
            try database.execute(Self.markPublished, [.text(EventSQL.arrayLiteral(ids))])
            return Batch(published: publishable.count, deferred: claimed.count - publishable.count)
        }
    }

    /// `XADD key MINID ~ <oldest kept> * field value …` for one claimed row.
    private static func xadd(_ event: PostgresRow, to key: String, trimmingBefore minimumID: String) throws
        -> [any RedisArgument]
    {
        var command: [any RedisArgument] = ["XADD", key, "MINID", "~", minimumID, "*", "schema_version", EventSQL.schemaVersion]
        // An event is about a subscription or a purchase: only the id it has is a field.
        for field in ["id", "type", "subscription_id", "purchase_id", "original_transaction_id", "occurred_at", "payload"] {
            guard let value = try event[field].text() else { continue }
            command += [field, value]
        }
        return command
    }

    /// Claims the oldest unpublished events no other relay holds, and says of each whether it may
    /// be published now: only if every earlier unpublished event of its subscription is claimed
    /// too. One statement, so the claim and the check see the same snapshot; an event another relay
    /// published meanwhile fails the row lock's re-check and is not claimed twice.
    private static let claim = """
        WITH claimed AS (
            SELECT id, seq, subscription_id, purchase_id FROM events
            WHERE published_at IS NULL
            ORDER BY seq
            LIMIT $1
            FOR UPDATE SKIP LOCKED
        ), held_elsewhere AS (
            SELECT subscription_id, purchase_id, min(seq) AS seq FROM events
            WHERE published_at IS NULL
              AND (subscription_id IN (SELECT subscription_id FROM claimed)
                   OR purchase_id IN (SELECT purchase_id FROM claimed))
              AND id NOT IN (SELECT id FROM claimed)
            GROUP BY subscription_id, purchase_id
        )
        SELECT e.id::text AS id, e.type, e.subscription_id::text AS subscription_id,
               e.purchase_id::text AS purchase_id,
               e.original_transaction_id, \(EventSQL.occurredAt) AS occurred_at, e.payload::text AS payload,
               (h.seq IS NULL OR c.seq < h.seq) AS publishable
        FROM claimed c
        JOIN events e ON e.id = c.id
        -- An event has one of the two ids; the other is NULL on both sides.
        LEFT JOIN held_elsewhere h ON h.subscription_id IS NOT DISTINCT FROM c.subscription_id
                                  AND h.purchase_id IS NOT DISTINCT FROM c.purchase_id
        ORDER BY c.seq
        """

    /// Stamps the events published and creates a delivery for each enabled endpoint that wants the
    /// type (an empty list wants all), in the relay's transaction.
    private static let markPublished = """
        WITH published AS (
            UPDATE events SET published_at = now() WHERE id = ANY ($1::uuid[]) RETURNING id, type
        )
        INSERT INTO webhook_deliveries (endpoint_id, event_id)
        SELECT w.id, p.id
        FROM published p
        JOIN webhook_endpoints w ON w.enabled AND (w.event_types = '{}' OR p.type = ANY (w.event_types))
        """
}
