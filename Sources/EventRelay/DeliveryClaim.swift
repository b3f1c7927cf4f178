import Foundation
import PostgresClient

/// What one look for due work found: deliveries leased to the caller, or why there are none.
enum DeliveryClaim {
    /// Deliveries to one endpoint, oldest due first, the caller's until their lease ends; it sends
    /// them one after another.
    case claimed([ClaimedDelivery])
    /// The endpoint picked had room when looked at, but other dispatchers filled it meanwhile:
    /// look again at once, since other endpoints may have work.
    case endpointFilledMeanwhile
    /// Nothing is due at an endpoint with room.
    case nothingDue

    /// Leases up to `batch` of the most overdue deliveries of the endpoint with the most overdue
    /// delivery among those with fewer than `perEndpoint` claims in flight, in one short
    /// transaction that holds no lock once it commits. A claim's deliveries share one lease end of
    /// their own (`leasedUntil`), which counts the endpoint's claims in flight: each claim sends one
    /// request at a time, so `perEndpoint` bounds the requests to it at once. The endpoint row stays
    /// locked for the transaction, so claims to one endpoint take turns and its count is exact;
    /// claims to different endpoints run side by side.
    static func next(
        on database: PostgresConnection, now: Date, leasedUntil: Date, perEndpoint: Int, batch: Int
    ) throws -> DeliveryClaim {
        try database.transaction { database in
            let parameters: [PostgresValue] = [.timestamptz(now), .int64(Int64(perEndpoint))]
            guard let endpoint = try database.query(endpointWithRoom, parameters).first?["id"].int64() else {
                return .nothingDue
            }
            let claimed = try database.query(
                leaseOldestDue, parameters + [.int64(endpoint), .timestamptz(leasedUntil), .int64(Int64(batch))])
            guard !claimed.isEmpty else { return .endpointFilledMeanwhile }
            return .claimed(try claimed.map { try ClaimedDelivery($0, leasedUntil: leasedUntil) }.sorted { $0.order < $1.order })
        }
    }

    /// Gives back the deliveries of a claim that were not sent (their endpoint failed or slowed
    /// the claim down): due again at once, for any dispatcher.
    static func release(_ deliveries: [ClaimedDelivery], on database: PostgresConnection) throws {
        guard let lease = deliveries.first?.leasedUntil else { return }
        try database.execute(
            "UPDATE webhook_deliveries SET leased_until = NULL WHERE id = ANY($1::bigint[]) AND state = 'pending' AND leased_until = $2",
            [.text("{" + deliveries.map { String($0.id) }.joined(separator: ",") + "}"), .timestamptz(lease)])
    }

    /// The enabled endpoint whose most overdue unleased delivery is oldest, among those with room
    /// ($1 now, $2 the cap). The count may be stale by the time the lock is granted (it is read in
    /// the snapshot taken before waiting), so `leaseOldestDue` counts again under the lock.
    private static let endpointWithRoom = """
        SELECT w.id
        FROM webhook_endpoints w
        CROSS JOIN LATERAL (
            SELECT d.next_attempt_at FROM webhook_deliveries d
            WHERE d.endpoint_id = w.id AND d.state = 'pending' AND d.next_attempt_at <= $1
              AND (d.leased_until IS NULL OR d.leased_until <= $1)
            ORDER BY d.next_attempt_at
            LIMIT 1
        ) oldest
        WHERE w.enabled AND \(inFlight("w.id")) < $2
        ORDER BY oldest.next_attempt_at, w.id
        LIMIT 1
        FOR UPDATE OF w
        """

    /// Leases ($4 until) the endpoint's ($3) most overdue unleased deliveries if fewer than $2
    /// claims are in flight at $1, and returns what sending them takes, each with its place in line.
    /// A claim takes its share of what is due, divided among the $2 claims the endpoint may have
    /// (at least one, at most $5), so that a few due deliveries go out side by side, not in a row.
    private static let leaseOldestDue = """
        UPDATE webhook_deliveries d SET leased_until = $4
        FROM webhook_endpoints w, events e, (
                SELECT id, row_number() OVER (ORDER BY next_attempt_at, id) AS place FROM (
                    SELECT id, next_attempt_at FROM webhook_deliveries
                    WHERE endpoint_id = $3 AND state = 'pending' AND next_attempt_at <= $1
                      AND (leased_until IS NULL OR leased_until <= $1)
                    ORDER BY next_attempt_at, id
                    LIMIT LEAST($5, GREATEST(1, (
                        SELECT count(*) FROM (
                            SELECT 1 FROM webhook_deliveries
                            WHERE endpoint_id = $3 AND state = 'pending' AND next_attempt_at <= $1
                              AND (leased_until IS NULL OR leased_until <= $1)
                            LIMIT $5 * $2) waiting) / $2))
                    FOR UPDATE SKIP LOCKED) due) oldest
        WHERE d.id = oldest.id
          AND \(inFlight("$3")) < $2
          AND w.id = d.endpoint_id AND e.id = d.event_id
        RETURNING d.id, oldest.place, d.attempts, e.id::text AS event_id, w.id AS endpoint_id, w.url, w.secret, w.secret_key_id, w.secret_sealed,
                  CASE WHEN w.previous_secret_until > $1 THEN w.previous_secret_key_id END AS previous_secret_key_id,
                  CASE WHEN w.previous_secret_until > $1 THEN w.previous_secret_sealed END AS previous_secret_sealed,
                  \(EventSQL.envelope) AS body
        """

    /// The number of the endpoint's claims in flight at $1: the lease ends of its leased deliveries
    /// (each claim has one of its own), the lease not yet over.
    private static func inFlight(_ endpoint: String) -> String {
        """
        (SELECT count(DISTINCT f.leased_until) FROM webhook_deliveries f
         WHERE f.endpoint_id = \(endpoint) AND f.state = 'pending' AND f.leased_until > $1)
        """
    }
}

/// A delivery leased to one dispatcher: where it goes, how to sign it, what to send, and the lease
/// that proves it is still this dispatcher's when the answer is recorded.
struct ClaimedDelivery {
    let id: Int64
    /// Its place in its claim's line: the most overdue first.
    let order: Int64
    let attempts: Int
    let eventID: String
    let endpointID: Int64
    let url: String
    /// The stored secret, opened only when signing, so it travels in no error.
    let secret: StoredSecret
    /// The secret a rotation still signs with beside it, until its time is up.
    let previousSecret: StoredSecret?
    let body: [UInt8]
    let leasedUntil: Date

    init(_ row: PostgresRow, leasedUntil: Date) throws {
        id = try row["id"].int64() ?? 0
        order = try row["place"].int64() ?? 0
        attempts = Int(try row["attempts"].int64() ?? 0)
        eventID = try row["event_id"].text() ?? ""
        endpointID = try row["endpoint_id"].int64() ?? 0
        url = try row["url"].text() ?? ""
        secret = try StoredSecret(row)
        previousSecret = try StoredSecret(previousIn: row)
        body = Array((try row["body"].text() ?? "").utf8)
        self.leasedUntil = leasedUntil
    }
}
