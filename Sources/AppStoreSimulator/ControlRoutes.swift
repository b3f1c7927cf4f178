import Hummingbird

/// Routes that tests, demos and fault drills use to steer the simulator while it runs:
///
/// - `GET /stats`, `POST /control/reset-stats`
/// - `GET|POST /control/clock` with `{"advance_seconds": N}` or `{"now_ms": T}`
/// - `POST /control/outage` with `{"seconds": N}`: 21005 for N seconds of simulator time (0 ends it)
/// - `GET|POST /control/notifications` with `{"url": U}` and any of `drop` (every send fails),
///   `fail_share`, `delay_seconds`, `unreachable_seconds` (from now, simulator time),
///   `unannounced_share` and `faults_seconds` (from now, how long the two shares apply; absent: for
///   ever) (`NotificationKnobs`): where V2 notifications go as the clock passes them
///   (no url: nowhere) and how their sending goes; the reading counts them (failures by cause:
///   `failed_by`). A clock move returns once the notifications it passed (and the retries it made
///   due) were attempted.
/// - `GET /control/notifications/missed`: every change serve was not told of when it happened
///   (`{"missed": [{"original_transaction_id", "type", "subtype", "at_ms", "why"}]}`, `why` being
///   `unannounced` or `send_failed`), for a benchmark to time the fleet's own finding of them
/// - `GET|POST /control/knobs` with any of `latency` ("150ms±50ms"), `unavailable_rate`, `http_503_rate`,
///   `garbage_rate`, `garbage_receipt_share`, `drop_rate`, `reset_rate`, `shared_secret` ("" for none),
///   `rate_limit` (0 for none)
/// - `GET /control/orders/{transactionId}`: `{"order_id": …}`, the order id Look Up Order ID knows the
///   transaction by (as on the customer's receipt email)
/// - `GET /control/truth`: with a fleet (`--fleet-size`), every subscription of the first app's fleet
///   and its true status at the simulator's time (`{"now_ms": T, "statuses": {otid: status}}`), for
///   a benchmark to hold the ledger against
/// - `POST /sink`: 204 to anything, a downstream system for the demo's webhook endpoint to deliver to;
///   `?delay_ms=N` (at most 10,000) answers N ms later, a slow one
extension SimulatedAppStore {
    func addControlRoutes(to router: Router<SimulatorRequestContext>) {
        router.post("sink") { request, _ in
            if let delay = request.uri.queryParameters.get("delay_ms").flatMap({ Int($0) }), (1...10_000).contains(delay) {
                try await Task.sleep(for: .milliseconds(delay))
            }
            return Response(status: .noContent)
        }
        router.get("stats") { _, _ in self.statistics }
        router.post("control/reset-stats") { _, _ in
            self.resetStatistics()
            return self.statistics
        }
        router.get("control/clock") { _, _ in ClockReading(nowMs: self.clock.nowMs) }
        router.get("control/truth") { _, _ in
            guard let truth = self.truth() else { throw HTTPError(.notFound, message: "This simulator serves no fleet (--fleet-size).") }
            return truth
        }
        router.post("control/clock") { request, context in
            let change = try await request.decode(as: ClockChange.self, context: context)
            switch (change.advanceSeconds, change.nowMs) {
            case (let seconds?, nil): self.clock.advance(byMs: Int64(seconds * 1000))
            case (nil, let milliseconds?): self.clock.set(nowMs: milliseconds)
            default: throw HTTPError(.badRequest, message: "Send exactly one of advance_seconds or now_ms.")
            }
            await self.sendDueNotifications()
            return ClockReading(nowMs: self.clock.nowMs)
        }
        router.get("control/notifications") { _, _ in NotificationsReading(self.sender.configuration) }
        router.get("control/notifications/missed") { _, _ in MissedReading(missed: self.sender.missed) }
        router.post("control/notifications") { request, context in
            let change = try await request.decode(as: NotificationsChange.self, context: context)
            do throws(KnobsError) {
                try self.sendNotifications(to: change.url, knobs: change.knobs(nowMs: self.clock.nowMs))
            } catch {
                throw HTTPError(.badRequest, message: error.description)
            }
            return NotificationsReading(self.sender.configuration)
        }
        router.post("control/outage") { request, context in
            let outage = try await request.decode(as: OutageRequest.self, context: context)
            guard outage.seconds >= 0 else { throw HTTPError(.badRequest, message: "seconds must not be negative.") }
            return OutageReading(outageUntilMs: self.startOutage(seconds: outage.seconds), nowMs: self.clock.nowMs)
        }
        router.get("control/orders/:transaction") { _, context in
            guard let order = context.parameters.get("transaction").flatMap({ UInt64($0) }).flatMap(SimulatedOrder.orderID(ofTransactionID:)) else {
                throw HTTPError(.notFound, message: "Not a transaction id of the simulator.")
            }
            return OrderReading(orderID: order)
        }
        router.get("control/knobs") { _, _ in KnobsReading(self.knobs) }
        router.post("control/knobs") { request, context in
            let update = try await request.decode(as: KnobsUpdate.self, context: context)
            do throws(KnobsError) {
                try self.setKnobs(update.applied(to: self.knobs))
            } catch {
                throw HTTPError(.badRequest, message: error.description)
            }
            return KnobsReading(self.knobs)
        }
    }
}

extension SimulatorStatistics: ResponseEncodable {}

struct ClockChange: Decodable {
    let advanceSeconds: Double?
    let nowMs: Int64?
    enum CodingKeys: String, CodingKey { case advanceSeconds = "advance_seconds", nowMs = "now_ms" }
}

/// Every subscription of a fleet and its true status at one moment.
struct TruthReading: ResponseEncodable {
    let nowMs: Int64
    let statuses: [String: String]
    enum CodingKeys: String, CodingKey { case nowMs = "now_ms", statuses }
}

extension SimulatedAppStore {
    /// The first app's fleet's statuses now, or nil without a fleet.
    func truth() -> TruthReading? {
        guard let serverAPI, let count = serverAPI.subscriptions.first, count > 0 else { return nil }
        let now = clock.nowMs
        let fleet = SimulatedReceipt.fleet(count: count, seed: serverAPI.seeds[0], anchorMs: serverAPI.anchorMs)
        return TruthReading(nowMs: now, statuses: Dictionary(
            fleet.flatMap(\.subscriptions).map { ($0.originalTransactionID, $0.groundTruth(at: now).status.rawValue) },
            uniquingKeysWith: { first, _ in first }))
    }
}

struct ClockReading: ResponseEncodable {
    let nowMs: Int64
    enum CodingKeys: String, CodingKey { case nowMs = "now_ms" }
}

struct OrderReading: ResponseEncodable {
    let orderID: String
    enum CodingKeys: String, CodingKey { case orderID = "order_id" }
}

struct OutageRequest: Decodable {
    let seconds: Double
}

struct OutageReading: ResponseEncodable {
    let outageUntilMs: Int64
    let nowMs: Int64
    enum CodingKeys: String, CodingKey { case outageUntilMs = "outage_until_ms", nowMs = "now_ms" }
}

/// A partial change of the knobs: absent fields keep their value.
struct KnobsUpdate: Decodable {
    let latency: String?
    let unavailableRate: Double?
    let http503Rate: Double?
    let garbageRate: Double?
    let garbageReceiptShare: Double?
    let dropRate: Double?
    let resetRate: Double?
    let sharedSecret: String?
    /// Bundle id to app-specific secret; an empty secret removes the app's.
    let appSharedSecrets: [String: String]?
    let rateLimit: Int?

    enum CodingKeys: String, CodingKey {
        case latency, unavailableRate = "unavailable_rate", http503Rate = "http_503_rate"
        case garbageRate = "garbage_rate", garbageReceiptShare = "garbage_receipt_share", dropRate = "drop_rate", resetRate = "reset_rate"
        case sharedSecret = "shared_secret", appSharedSecrets = "app_shared_secrets", rateLimit = "rate_limit"
    }

    func applied(to knobs: FaultKnobs) throws(KnobsError) -> FaultKnobs {
        var knobs = knobs
        if let latency {
            guard let parsed = Latency(parsing: latency) else {
                throw KnobsError(message: "latency must look like 150ms±50ms, 0ms or 2s")
            }
            knobs.latency = parsed
        }
        if let unavailableRate { knobs.unavailableRate = unavailableRate }
        if let http503Rate { knobs.serviceUnavailableRate = http503Rate }
        if let garbageRate { knobs.garbageRate = garbageRate }
        if let garbageReceiptShare { knobs.garbageReceiptShare = garbageReceiptShare }
        if let dropRate { knobs.dropRate = dropRate }
        if let resetRate { knobs.resetRate = resetRate }
        if let sharedSecret { knobs.sharedSecret = sharedSecret.isEmpty ? nil : sharedSecret }
        for (bundleID, secret) in appSharedSecrets ?? [:] { knobs.appSharedSecrets[bundleID] = secret.isEmpty ? nil : secret }
        if let rateLimit { knobs.rateLimit = rateLimit == 0 ? nil : rateLimit }
        return knobs
    }
}

/// The knobs as reported: the shared secret itself is never shown, only whether one is set.
struct KnobsReading: ResponseEncodable {
    let latency: String
    let unavailableRate: Double
    let http503Rate: Double
    let garbageRate: Double
    let garbageReceiptShare: Double
    let dropRate: Double
    let resetRate: Double
    let sharedSecretSet: Bool
    /// The bundle ids that have an app-specific secret.
    let appSharedSecretsSet: [String]
    let rateLimit: Int?

    init(_ knobs: FaultKnobs) {
        latency = knobs.latency.description
        unavailableRate = knobs.unavailableRate
        http503Rate = knobs.serviceUnavailableRate
        garbageRate = knobs.garbageRate
        garbageReceiptShare = knobs.garbageReceiptShare
        dropRate = knobs.dropRate
        resetRate = knobs.resetRate
        sharedSecretSet = knobs.sharedSecret != nil
        appSharedSecretsSet = knobs.appSharedSecrets.keys.sorted()
        rateLimit = knobs.rateLimit
    }

    enum CodingKeys: String, CodingKey {
        case latency, unavailableRate = "unavailable_rate", http503Rate = "http_503_rate", garbageRate = "garbage_rate"
        case garbageReceiptShare = "garbage_receipt_share", dropRate = "drop_rate", resetRate = "reset_rate"
        case sharedSecretSet = "shared_secret_set", appSharedSecretsSet = "app_shared_secrets_set", rateLimit = "rate_limit"
    }
}

struct NotificationsChange: Decodable {
    let url: String?
    let drop: Bool?
    let failShare: Double?
    let delaySeconds: Double?
    let unreachableSeconds: Double?
    let unannouncedShare: Double?
    let faultsSeconds: Double?
    enum CodingKeys: String, CodingKey {
        case url, drop, failShare = "fail_share", delaySeconds = "delay_seconds", unreachableSeconds = "unreachable_seconds"
        case unannouncedShare = "unannounced_share", faultsSeconds = "faults_seconds"
    }

    func knobs(nowMs: Int64) -> NotificationKnobs {
        NotificationKnobs(
            drop: drop ?? false, failShare: failShare ?? 0, delayMs: Int64((delaySeconds ?? 0) * 1000),
            unreachableUntilMs: unreachableSeconds.map { nowMs + Int64($0 * 1000) } ?? 0, unannouncedShare: unannouncedShare ?? 0,
            faultsUntilMs: faultsSeconds.map { nowMs + Int64($0 * 1000) } ?? .max)
    }
}

struct MissedReading: ResponseEncodable {
    let missed: [MissedChange]
}

struct NotificationsReading: ResponseEncodable {
    let url: String?
    let drop: Bool
    let failShare: Double
    let delaySeconds: Double
    let unreachableUntilMs: Int64
    let unannouncedShare: Double
    /// When the shares stop applying (simulator time, ms); absent: never.
    let faultsUntilMs: Int64?
    let sent: Int
    let failed: Int
    let failedBy: [String: Int]
    let pending: Int
    let retrying: Int
    enum CodingKeys: String, CodingKey {
        case url, drop, failShare = "fail_share", delaySeconds = "delay_seconds", unreachableUntilMs = "unreachable_until_ms"
        case unannouncedShare = "unannounced_share", faultsUntilMs = "faults_until_ms", sent, failed, failedBy = "failed_by", pending, retrying
    }

    init(_ configuration: (url: String?, knobs: NotificationKnobs, counts: NotificationSender.Counts)) {
        let (knobs, counts) = (configuration.knobs, configuration.counts)
        (url, drop, failShare, delaySeconds) = (configuration.url, knobs.drop, knobs.failShare, Double(knobs.delayMs) / 1000)
        (unreachableUntilMs, unannouncedShare) = (knobs.unreachableUntilMs, knobs.unannouncedShare)
        faultsUntilMs = knobs.faultsUntilMs == .max ? nil : knobs.faultsUntilMs
        (sent, failed, failedBy, pending, retrying) = (counts.sent, counts.failed, counts.failedBy, counts.pending, counts.retrying)
    }
}
