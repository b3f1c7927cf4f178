import Foundation
import Lanes
import HTTPClient
import PostgresClient

/// Delivers pending webhook deliveries: POSTs each event, signed the Standard Webhooks way, and
/// retries on the configured schedule until a 2xx answer, a 410 Gone, or the schedule runs out.
///
/// One dispatcher sends one request at a time; a process runs several side by side, each on a
/// thread of its own with its own connections (the fleet's `WebhookDispatchers` service). No
/// transaction spans a request, so a slow receiver holds no lock and no database session: a short
/// transaction leases a claim of up to `claimSize` due deliveries to one endpoint (`DeliveryClaim`),
/// the requests go out one after another over one connection, and a second short transaction
/// records the answers: two commits for a claim, not for each delivery, so one quick receiver
/// gets well over a thousand a second. A failed attempt, or a claim past `claimTime`, gives the
/// unsent rest back. At most `perEndpointConcurrency` claims to one endpoint are in flight across
/// all dispatchers, so a receiver that stops answering ties up that many threads and the others go
/// on serving the other endpoints. A dispatcher that dies mid-claim leaves its deliveries leased
/// until the lease ends; then they are due again (receivers de-duplicate by `webhook-id`). Every
/// attempt is recorded in `webhook_attempts`. The endpoint's secret goes into the signature only:
/// never into a log, an error or an attempt.
public final class WebhookDispatcher {
    public let configuration: WebhookConfiguration
    private let database: PostgresConnection
    private let http: HTTPClient
    private let now: () -> Date

    /// A dispatcher working through `database` from the calling thread, with its own HTTP client.
    /// `now` is the clock that decides what is due, stamps attempts and sets leases (tests move it forward).
    public init(
        database: PostgresConnection, configuration: WebhookConfiguration,
        now: @escaping () -> Date = Date.init
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.database = database
        self.now = now
        http = try HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: min(configuration.timeout, .seconds(10)),
            totalTimeout: configuration.timeout,
            userAgent: configuration.userAgent,
            // Only the status and Retry-After matter; a receiver's long answer must not cost memory.
            maxBodyBytes: 64 * 1024,
            proxy: configuration.proxy.map { .url($0) } ?? .none,
            publicAddressesOnly: !configuration.allowsPrivateNetworks && configuration.proxy == nil))
    }

    /// The most deliveries one claim takes.
    static let claimSize = 16
    /// How long a claim may go on sending: each request then still ends (by its timeout) well within
    /// the lease, which is the timeout and a minute.
    static let claimTime: Duration = .seconds(30)

    /// Makes up to `limit` attempts (the configured batch size by default), one due delivery each,
    /// and returns how many it made: fewer when fewer were due. `onAttempt` hears what became of
    /// each attempt once it is recorded (for metrics).
    @discardableResult
    public func runOnce(limit: Int? = nil, onAttempt: (DeliveryAttemptResult) -> Void = { _ in }) throws -> Int {
        let limit = limit ?? configuration.batchSize
        var attempts = 0
        while attempts < limit {
            let claimedAt = now()
            switch try DeliveryClaim.next(
                on: database, now: claimedAt, leasedUntil: claimedAt.addingTimeInterval(configuration.lease.seconds),
                perEndpoint: configuration.perEndpointConcurrency, batch: min(Self.claimSize, limit - attempts))
            {
            case .nothingDue:
                return attempts
            case .endpointFilledMeanwhile:
                continue
            case .claimed(let deliveries):
                let started = ContinuousClock.now
                var sent: [(ClaimedDelivery, AttemptOutcome, Date)] = []
                for delivery in deliveries {
                    let attemptedAt = now()
                    let outcome = send(delivery, at: attemptedAt)
                    sent.append((delivery, outcome, attemptedAt))
                    if !outcome.isDelivered || started.duration(to: .now) > Self.claimTime { break }
                }
                let results = try database.transaction { database in
                    if sent.contains(where: { $0.1.isGone }), let endpoint = deliveries.first?.endpointID {
                        // The endpoint before its deliveries, the order claims lock in: two 410s to one
                        // endpoint at once would otherwise each hold a delivery the other's disable needs.
                        try database.execute("SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE", [.int64(endpoint)])
                    }
                    try DeliveryClaim.release(Array(deliveries.dropFirst(sent.count)), on: database)
                    return try record(sent, on: database)
                }
                results.forEach(onAttempt)
                attempts += sent.count
            }
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

    /// POSTs the event and classifies the answer. Never throws: every failure is an outcome to record.
    private func send(_ delivery: ClaimedDelivery, at attemptedAt: Date) -> AttemptOutcome {
        let started = ContinuousClock.now
        let secrets: [WebhookSecret]
        do {
            // Checked again at every attempt: the policy may have changed since the endpoint was added.
            try WebhookDestination.check(
                delivery.url, allowsPrivateNetworks: configuration.allowsPrivateNetworks, resolving: false, adding: false)
            secrets = try [delivery.secret, delivery.previousSecret].compactMap(\.self).map { stored throws(WebhookError) in
                try stored.open(with: configuration.secretKeys, endpointID: delivery.endpointID)
            }
        } catch {
            return AttemptOutcome(failure: "\(error)", latency: .zero)
        }
        let timestamp = Int64(attemptedAt.timeIntervalSince1970.rounded(.down))
        let headers: HTTPHeaders = [
            "webhook-id": delivery.eventID,
            "webhook-timestamp": String(timestamp),
            // During a rotation, one signature per secret, the new one first, space-separated.
            "webhook-signature": secrets.map { $0.signature(id: delivery.eventID, timestamp: timestamp, body: delivery.body) }
                .joined(separator: " "),
        ]
        do {
            let response = try http.post(url: delivery.url, json: delivery.body, headers: headers)
            return AttemptOutcome(response, latency: ContinuousClock.now - started, now: attemptedAt)
        } catch {
            return AttemptOutcome(failure: error.description, latency: ContinuousClock.now - started)
        }
    }

    /// Records the claim's attempts and moves each delivery still this dispatcher's on (delivered,
    /// failed, or due again later), in two statements for the whole claim, and disables the
    /// endpoint on a 410, in the claim's closing transaction. A delivery no longer this
    /// dispatcher's (its lease ran out and another dispatcher claimed it, or a 410 to another
    /// request failed it meanwhile) is left as it is, and has no result.
    private func record(
        _ sent: [(delivery: ClaimedDelivery, outcome: AttemptOutcome, attemptedAt: Date)], on database: PostgresConnection
    ) throws -> [DeliveryAttemptResult] {
        guard let lease = sent.first?.delivery.leasedUntil else { return [] }
        let moves = sent.map { delivery, outcome, attemptedAt in
            let attempts = delivery.attempts + 1
            let next = outcome.retryDelay(after: attempts, schedule: configuration.retryDelays)
            return (delivery: delivery, outcome: outcome, attemptedAt: attemptedAt, attempts: attempts, next: next,
                    state: outcome.isDelivered ? "delivered" : next == nil ? "failed" : "pending")
        }
        let rows = moves.map { move in
            AttemptRow(
                id: move.delivery.id, at_ms: Int64(move.attemptedAt.timeIntervalSince1970 * 1000), status: move.outcome.status,
                error: move.outcome.error, latency_ms: move.outcome.latency.milliseconds, state: move.state, attempts: move.attempts,
                next_ms: move.next.map { Int64((move.attemptedAt.timeIntervalSince1970 + $0.seconds) * 1000) })
        }
        let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        let moved = Set(try database.query(Self.recordClaim, [.text(json), .timestamptz(lease)]).map { try $0["id"].int64() ?? 0 })
        var results: [DeliveryAttemptResult] = []
        for move in moves where moved.contains(move.delivery.id) {
            if move.outcome.isGone {
                let reason = "the receiver answered 410 Gone at \(move.attemptedAt.formatted(.iso8601))"
                _ = try WebhookRegistry.disable(id: move.delivery.endpointID, reason: reason, on: database)
                results.append(.disabled)
            } else {
                results.append(move.outcome.isDelivered ? .delivered : move.next == nil ? .failed : .retry)
            }
        }
        return results
    }

    /// Logs a claim's attempts ($1, a JSON array of them) and moves on each of its deliveries still
    /// leased until $2 and pending; returns the ids it moved. An attempt whose delivery was removed
    /// meanwhile (with its endpoint) logs nothing.
    private static let recordClaim = """
        WITH attempt AS (
            SELECT a.*, to_timestamp(a.at_ms / 1000.0) AS attempted_at
            FROM jsonb_to_recordset($1::jsonb) AS a(id bigint, at_ms bigint, status integer, error text,
                                                    latency_ms bigint, state text, attempts integer, next_ms bigint)),
        logged AS (
            INSERT INTO webhook_attempts (delivery_id, attempted_at, response_status, error, latency_ms)
            SELECT a.id, a.attempted_at, a.status, a.error, a.latency_ms FROM attempt a JOIN webhook_deliveries d ON d.id = a.id)
        UPDATE webhook_deliveries d
        SET state = a.state, attempts = a.attempts, last_status = a.status, last_error = a.error,
            next_attempt_at = coalesce(to_timestamp(a.next_ms / 1000.0), d.next_attempt_at),
            delivered_at = CASE WHEN a.state = 'delivered' THEN a.attempted_at END, leased_until = NULL
        FROM attempt a
        WHERE d.id = a.id AND d.state = 'pending' AND d.leased_until = $2
        RETURNING d.id
        """
}

/// One attempt of a claim, as `recordClaim` reads it (times in ms since 1970).
private struct AttemptRow: Encodable {
    let id: Int64
    let at_ms: Int64
    let status: Int?
    let error: String?
    let latency_ms: Int64
    let state: String
    let attempts: Int
    let next_ms: Int64?
}
