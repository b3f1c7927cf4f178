import Foundation
import Lanes
import HTTPClient
import PostgresClient

/// Delivers pending webhook deliveries: POSTs each event, signed the Standard Webhooks way, and
/// retries on the configured schedule until a 2xx answer, a 410 Gone, or the schedule runs out.
///
/// Each attempt is one PostgreSQL transaction that holds its delivery row (`FOR UPDATE SKIP
/// LOCKED`) through the request, so several dispatchers never try the same delivery at once; a
/// dispatcher that dies mid-request leaves the delivery due, to be sent again (receivers
/// de-duplicate by `webhook-id`). Every attempt is recorded in `webhook_attempts`. The endpoint's
/// secret goes into the signature only: never into a log, an error or an attempt.
public final class WebhookDispatcher {
    public let configuration: WebhookConfiguration
    private let database: PostgresConnection
    private let http: HTTPClient
    private let now: () -> Date

    /// A dispatcher working through `database` from the calling thread, with its own HTTP client.
    /// `now` is the clock that decides what is due and stamps attempts (tests move it forward).
    public init(
        database: PostgresConnection, configuration: WebhookConfiguration = WebhookConfiguration(),
        now: @escaping () -> Date = Date.init
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.database = database
        self.now = now
        http = try HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: min(configuration.timeout, .seconds(10)),
            totalTimeout: configuration.timeout,
            userAgent: configuration.userAgent))
    }

    /// Makes up to `limit` attempts (the configured batch size by default), one due delivery each,
    /// and returns how many it made: fewer when fewer were due. `onAttempt` hears what became of
    /// each attempt once it is recorded (for metrics).
    @discardableResult
    public func runOnce(limit: Int? = nil, onAttempt: (DeliveryAttemptResult) -> Void = { _ in }) throws -> Int {
        let limit = limit ?? configuration.batchSize
        var attempts = 0
        while attempts < limit, let result = try attemptNextDue() {
            onAttempt(result)
            attempts += 1
        }
        return attempts
    }

    /// Delivers until `stop` is set, looking for due deliveries every `pollInterval` when idle. A
    /// round that fails is reported to `onError` and tried again after `pollInterval`.
    public func run(
        until stop: StopSignal, onError: (any Error) -> Void = { _ in },
        onAttempt: (DeliveryAttemptResult) -> Void = { _ in }
    ) {
        while !stop.isSet {
            do {
                if try runOnce(onAttempt: onAttempt) > 0 { continue }
            } catch {
                onError(error)
            }
            stop.sleep(configuration.pollInterval)
        }
    }

    /// Attempts the most overdue delivery, if any is due, and says what became of it; nil when none is due.
    private func attemptNextDue() throws -> DeliveryAttemptResult? {
        try database.transaction { database in
            let attemptedAt = now()
            guard let row = try database.query(Self.claimDue, [.timestamptz(attemptedAt)]).first else { return nil }
            let delivery = try DueDelivery(row)
            let outcome = send(delivery, at: attemptedAt)
            return try record(outcome, of: delivery, at: attemptedAt, on: database)
        }
    }

    /// POSTs the event and classifies the answer. Never throws: every failure is an outcome to record.
    private func send(_ delivery: DueDelivery, at attemptedAt: Date) -> AttemptOutcome {
        let started = ContinuousClock.now
        let secret: WebhookSecret
        do {
            secret = try WebhookSecret(delivery.secret)
        } catch {
            return AttemptOutcome(failure: "\(error)", latency: .zero)
        }
        let timestamp = Int64(attemptedAt.timeIntervalSince1970.rounded(.down))
        let headers: HTTPHeaders = [
            "webhook-id": delivery.eventID,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": secret.signature(id: delivery.eventID, timestamp: timestamp, body: delivery.body),
        ]
        do {
            let response = try http.post(url: delivery.url, json: delivery.body, headers: headers)
            return AttemptOutcome(response, latency: ContinuousClock.now - started, now: attemptedAt)
        } catch {
            return AttemptOutcome(failure: error.description, latency: ContinuousClock.now - started)
        }
    }

    /// Records the attempt, moves the delivery on (delivered, failed, or due again later), and
    /// disables the endpoint on a 410, all in the attempt's transaction.
    private func record(
        _ outcome: AttemptOutcome, of delivery: DueDelivery, at attemptedAt: Date, on database: PostgresConnection
    ) throws -> DeliveryAttemptResult {
        let status: PostgresValue = outcome.status.map { .int64(Int64($0)) } ?? .null
        let error: PostgresValue = outcome.error.map { .text($0) } ?? .null
        try database.execute(
            """
            INSERT INTO webhook_attempts (delivery_id, attempted_at, response_status, error, latency_ms)
            VALUES ($1, $2, $3::integer, $4, $5::integer)
            """,
            [.int64(delivery.id), .timestamptz(attemptedAt), status, error, .int64(outcome.latency.milliseconds)])

        let attempts = delivery.attempts + 1
        let next = outcome.retryDelay(after: attempts, schedule: configuration.retryDelays)
        let state = outcome.isDelivered ? "delivered" : next == nil ? "failed" : "pending"
        try database.execute(
            """
            UPDATE webhook_deliveries
            SET state = $2, attempts = $3::integer, last_status = $4::integer, last_error = $5,
                next_attempt_at = coalesce($6, next_attempt_at), delivered_at = $7
            WHERE id = $1
            """,
            [.int64(delivery.id), .text(state), .int64(Int64(attempts)), status, error,
             next.map { .timestamptz(attemptedAt.addingTimeInterval($0.seconds)) } ?? .null,
             outcome.isDelivered ? .timestamptz(attemptedAt) : .null])

        if outcome.isGone {
            let reason = "the receiver answered 410 Gone at \(attemptedAt.formatted(.iso8601))"
            _ = try WebhookRegistry.disable(id: delivery.endpointID, reason: reason, on: database)
            return .disabled
        }
        return outcome.isDelivered ? .delivered : next == nil ? .failed : .retry
    }

    /// The most overdue pending delivery to an enabled endpoint that no other dispatcher holds,
    /// with what sending it takes. Only the delivery row is locked.
    private static let claimDue = """
        SELECT d.id, d.attempts, e.id::text AS event_id, w.id AS endpoint_id, w.url, w.secret,
               \(EventSQL.envelope) AS body
        FROM webhook_deliveries d
        JOIN webhook_endpoints w ON w.id = d.endpoint_id
        JOIN events e ON e.id = d.event_id
        WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND w.enabled
        ORDER BY d.next_attempt_at, d.id
        LIMIT 1
        FOR UPDATE OF d SKIP LOCKED
        """
}

/// A claimed delivery: where it goes, how to sign it, and what to send.
private struct DueDelivery {
    let id: Int64
    let attempts: Int
    let eventID: String
    let endpointID: Int64
    let url: String
    /// The stored secret text; parsed only when signing, so it travels in no error.
    let secret: String
    let body: [UInt8]

    init(_ row: PostgresRow) throws {
        id = try row["id"].int64() ?? 0
        attempts = Int(try row["attempts"].int64() ?? 0)
        eventID = try row["event_id"].text() ?? ""
        endpointID = try row["endpoint_id"].int64() ?? 0
        url = try row["url"].text() ?? ""
        secret = try row["secret"].text() ?? ""
        body = Array((try row["body"].text() ?? "").utf8)
    }
}
