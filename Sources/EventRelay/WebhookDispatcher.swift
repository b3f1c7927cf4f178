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
                    return try sent.compactMap { delivery, outcome, attemptedAt in
                        try record(outcome, of: delivery, at: attemptedAt, on: database)
                    }
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

    /// Records the attempt and, if the delivery is still this dispatcher's, moves it on (delivered,
    /// failed, or due again later) and disables the endpoint on a 410, in the claim's closing
    /// transaction. Returns nil when the delivery was no longer this dispatcher's: its lease ran out
    /// and another dispatcher claimed it, or a 410 to another request failed it meanwhile.
    private func record(
        _ outcome: AttemptOutcome, of delivery: ClaimedDelivery, at attemptedAt: Date, on database: PostgresConnection
    ) throws -> DeliveryAttemptResult? {
        let status: PostgresValue = outcome.status.map { .int64(Int64($0)) } ?? .null
        let error: PostgresValue = outcome.error.map { .text($0) } ?? .null
        // Through a SELECT, so that a delivery removed meanwhile with its endpoint logs nothing.
        try database.execute(
            """
            INSERT INTO webhook_attempts (delivery_id, attempted_at, response_status, error, latency_ms)
            SELECT id, $2, $3::integer, $4, $5::integer FROM webhook_deliveries WHERE id = $1
            """,
            [.int64(delivery.id), .timestamptz(attemptedAt), status, error, .int64(outcome.latency.milliseconds)])

        let attempts = delivery.attempts + 1
        let next = outcome.retryDelay(after: attempts, schedule: configuration.retryDelays)
        let state = outcome.isDelivered ? "delivered" : next == nil ? "failed" : "pending"
        let moved = try database.execute(
            """
            UPDATE webhook_deliveries
            SET state = $2, attempts = $3::integer, last_status = $4::integer, last_error = $5,
                next_attempt_at = coalesce($6, next_attempt_at), delivered_at = $7, leased_until = NULL
            WHERE id = $1 AND state = 'pending' AND leased_until = $8
            """,
            [.int64(delivery.id), .text(state), .int64(Int64(attempts)), status, error,
             next.map { .timestamptz(attemptedAt.addingTimeInterval($0.seconds)) } ?? .null,
             outcome.isDelivered ? .timestamptz(attemptedAt) : .null, .timestamptz(delivery.leasedUntil)])
        guard moved == 1 else { return nil }

        if outcome.isGone {
            let reason = "the receiver answered 410 Gone at \(attemptedAt.formatted(.iso8601))"
            _ = try WebhookRegistry.disable(id: delivery.endpointID, reason: reason, on: database)
            return .disabled
        }
        return outcome.isDelivered ? .delivered : next == nil ? .failed : .retry
    }
}
