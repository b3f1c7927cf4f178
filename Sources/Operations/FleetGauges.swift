import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Ledger
import Metrics
import PostgresClient
import RedisClient

/// The fleet-wide gauges (docs/metrics.md), read from Redis and PostgreSQL whenever they are
/// asked for, at each scrape, so that every process reports the same truth; and, from the same
/// reading, whether the fleet can work (`/readyz`).
///
/// The reading is `FleetStatusReader`'s, the one `status` and the ops console show. It blocks, so
/// it runs on a lane of its own with its own connections, never on Swift's cooperative pool. A source that does not answer leaves its gauges at their last value and says
/// so in the readiness.
public final class FleetGauges: Sendable {
    private let lane: Lane<GaugeReader>
    private let instruments: Instruments

    public init(settings: FleetSettings, clock: any FleetClock, factory: any MetricsFactory = MetricsSystem.factory) {
        lane = Lane(name: "rf-metrics") { GaugeReader(settings: settings, clock: clock) }
        instruments = Instruments(factory: factory, rateLimit: settings.rateLimit.perSecond, apps: settings.apps.names)
    }

    /// Reads the fleet's state, records it in the gauges, and says whether the fleet can work.
    public func refresh() async -> FleetReadiness {
        do {
            let (reading, tokensGranted) = try await lane.run { reader in reader.read() }
            instruments.record(reading, tokensGranted: tokensGranted)
            var problems = reading.problems
            if let reason = reading.redisSide?.queue.haltedReason {
                problems.append("the fleet is halted (\(reason)); fix the cause, then run `receiptfleet resume`")
            }
            return FleetReadiness(problems: problems)
        } catch {
            return FleetReadiness(problems: ["\(error)"])  // the lane is shut down
        }
    }

    /// Closes the connections; blocks until a read in progress has finished.
    public func shutdown() {
        lane.shutdown()
    }
}

/// Whether the fleet can work: Redis and PostgreSQL answer, and the fleet is not halted.
public struct FleetReadiness: Sendable, Equatable {
    /// What keeps it from working, for people; empty when nothing does. Never holds a password.
    public var problems: [String]

    public var isReady: Bool { problems.isEmpty }
}

/// The lane's resource: the status reader, and the limiter's all-time count at the previous
/// reading (the gauge's counter grows by the difference).
private final class GaugeReader {
    let status: FleetStatusReader
    private var tokensGrantedSeen: Int64 = 0

    init(settings: FleetSettings, clock: any FleetClock) {
        status = FleetStatusReader(settings: settings, clock: clock, quick: true)
    }

    /// The live reading, with the tokens granted since the last one.
    func read() -> (FleetReading, tokensGranted: Int64) {
        let reading = status.read(.live)
        guard let granted = reading.redisSide?.rateLimit.tokensGranted else { return (reading, 0) }
        // A smaller count means Redis lost it (flushed, failed over): count afresh from there.
        defer { tokensGrantedSeen = granted }
        return (reading, granted - (granted >= tokensGrantedSeen ? tokensGrantedSeen : 0))
    }
}

/// The gauges, and the one counter read from Redis.
private struct Instruments: Sendable {
    let jobs: [(state: String, gauge: Gauge)]
    let oldestJobAge: Gauge
    let liveWorkers: Gauge
    let silentWorkers: Gauge
    let paused: Gauge
    let halted: Gauge
    let serverAPIHalted: Gauge
    /// Per app: halted (1) or not, verifications in the last minute, and notification-first (1) or nightly.
    let apps: [(name: String, halted: Gauge, verified: Gauge, notificationFirst: Gauge, freshness: Gauge, checks: Gauge)]
    let tokensGranted: Counter
    let outboxUnpublished: Gauge
    let outboxLag: Gauge
    let schedulerLastSuccess: Gauge
    let consumptionNearingDeadline: Gauge

    init(factory: any MetricsFactory, rateLimit: Double, apps names: [String]) {
        func gauge(_ name: String, _ dimensions: [(String, String)] = []) -> Gauge {
            Gauge(label: name, dimensions: dimensions, factory: factory)
        }
        jobs = ["ready", "ready_high", "reserved", "delayed", "dead"].map { ($0, gauge(MetricName.jobs, [("state", $0)])) }
        oldestJobAge = gauge(MetricName.oldestJobAge)
        liveWorkers = gauge(MetricName.liveWorkers)
        silentWorkers = gauge(MetricName.silentWorkers)
        paused = gauge(MetricName.fleetPaused)
        halted = gauge(MetricName.fleetHalted)
        serverAPIHalted = gauge(MetricName.serverAPIHalted)
        apps = names.map {
            ($0, gauge(MetricName.appHalted, [("app", $0)]), gauge(MetricName.appVerifiedLastMinute, [("app", $0)]),
             gauge(MetricName.appNotificationFirst, [("app", $0)]), gauge(MetricName.appFreshness, [("app", $0)]),
             gauge(MetricName.appChecksPerSubscription, [("app", $0)]))
        }
        tokensGranted = Counter(label: MetricName.rateLimiterTokensGranted, factory: factory)
        outboxUnpublished = gauge(MetricName.outboxUnpublished)
        outboxLag = gauge(MetricName.outboxLag)
        schedulerLastSuccess = gauge(MetricName.schedulerLastSuccess)
        consumptionNearingDeadline = gauge(MetricName.consumptionRequestsNearingDeadline)
        gauge(MetricName.rateLimit).record(rateLimit)
    }

    func record(_ reading: FleetReading, tokensGranted granted: Int64) {
        if let side = reading.redisSide {
            let queue = side.queue
            // The states part the jobs: `ready` is the ordinary stream, `ready_high` the high-priority one.
            let counts = [queue.ready - queue.readyHigh, queue.readyHigh, queue.reserved, queue.delayedDue + queue.delayedLater, queue.dead]
            for ((_, gauge), count) in zip(jobs, counts) { gauge.record(count) }
            oldestJobAge.record(queue.oldestJobAgeSeconds ?? 0)
            liveWorkers.record(queue.liveWorkers)
            silentWorkers.record(queue.silentWorkers.count)
            // Paused until a probe finds Apple back, also once the pause's time is up.
            paused.record(queue.pausedUntil == nil ? 0 : 1)
            halted.record(queue.haltedReason == nil ? 0 : 1)
            serverAPIHalted.record(side.serverAPI.haltedReason == nil ? 0 : 1)
            for app in apps {
                app.halted.record(side.haltedApps[app.name] == nil ? 0 : 1)
                if let schedule = side.schedules.first(where: { $0.app == app.name }) {
                    app.notificationFirst.record(schedule.notificationFirst ? 1 : 0)
                    // NaN, Prometheus's "no value", when the last pass had none: an earlier pass's figure would mislead.
                    app.freshness.record(schedule.freshnessP99Seconds ?? .nan)
                    app.checks.record(schedule.checksPerSubscription ?? .nan)
                }
            }
            tokensGranted.increment(by: granted)
            schedulerLastSuccess.record(side.lastSchedulerRun?.finishedAt?.timeIntervalSince1970 ?? 0)
        }
        if let verified = reading.ledgerSide?.verifiedLastMinute {
            for app in apps { app.verified.record(verified[app.name] ?? 0) }
        }
        if let outbox = reading.ledgerSide?.outbox {
            outboxUnpublished.record(outbox.unpublished)
            outboxLag.record(outbox.oldestUnpublishedAgeSeconds ?? 0)
        }
        if let nearing = reading.ledgerSide?.consumptionRequestsNearingDeadline { consumptionNearingDeadline.record(nearing) }
    }
}
