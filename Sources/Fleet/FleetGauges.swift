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
/// The reads block, so they run on a lane of their own with its own connections, never on Swift's
/// cooperative pool. A source that does not answer leaves its gauges at their last value and says
/// so in the readiness.
public final class FleetGauges: Sendable {
    private let lane: Lane<FleetReader>
    private let instruments: Instruments

    public init(settings: FleetSettings, factory: any MetricsFactory = MetricsSystem.factory) {
        lane = Lane(name: "rf-metrics") { FleetReader(settings: settings) }
        instruments = Instruments(factory: factory, rateLimit: settings.rateLimit.perSecond)
    }

    /// Reads the fleet's state, records it in the gauges, and says whether the fleet can work.
    public func refresh() async -> FleetReadiness {
        do {
            let reading = try await lane.run { reader in reader.read() }
            instruments.record(reading)
            return FleetReadiness(problems: reading.problems)
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

/// One reading of the fleet; the parts whose source did not answer are nil.
private struct FleetReading: Sendable {
    var queue: QueueStats?
    /// Set while the App Store Server API alone is halted.
    var serverAPIHaltedReason: String?
    var lastSchedulerRun: ScheduleSummary?
    /// Tokens the limiter granted since the previous reading.
    var tokensGranted: Int64 = 0
    var outbox: OutboxBacklog?
    var problems: [String] = []
}

/// The lane's resource: its own connections, made when first needed and again after a failure
/// to connect (a broken connection reconnects by itself).
private final class FleetReader {
    private let settings: FleetSettings
    private var redis: (connection: RedisConnection, queue: JobQueue)?
    private var ledger: Ledger?
    /// The limiter's all-time count at the previous reading: the gauge's counter grows by the difference.
    private var tokensGrantedSeen: Int64 = 0

    init(settings: FleetSettings) {
        self.settings = settings
    }

    func read() -> FleetReading {
        var reading = FleetReading()
        do {
            let (connection, queue) = try redis ?? connectRedis()
            redis = (connection, queue)
            let stats = try queue.stats()
            reading.queue = stats
            reading.serverAPIHaltedReason = try connection.command("GET", queue.keys.halted(FleetSettings.serverAPIGroup)).string
            reading.lastSchedulerRun = try ScheduleSummary.last(on: connection, keys: queue.keys)
            // A smaller count means Redis lost it (flushed, failed over): count afresh from there.
            reading.tokensGranted = stats.limiterGranted - (stats.limiterGranted >= tokensGrantedSeen ? tokensGrantedSeen : 0)
            tokensGrantedSeen = stats.limiterGranted
            if let reason = stats.haltedReason {
                reading.problems.append("the fleet is halted (\(reason)); fix the cause, then run `receiptfleet resume`")
            }
        } catch {
            reading.problems.append("cannot read Redis: \(error)")
        }
        do {
            let ledger = try self.ledger ?? connectPostgres()
            self.ledger = ledger
            reading.outbox = try ledger.outboxBacklog(now: Date())
        } catch {
            reading.problems.append("cannot read PostgreSQL: \(error)")
        }
        return reading
    }

    /// Short timeouts: a scrape or a readiness probe must answer within seconds, reachable or not.
    private func connectRedis() throws -> (RedisConnection, JobQueue) {
        var configuration = try settings.redisConfiguration()
        configuration.connectTimeout = .seconds(2)
        configuration.commandTimeout = .seconds(5)
        let connection = try RedisConnection(configuration)
        let queue = try JobQueue(
            connection: connection, keys: QueueKeys(prefix: settings.keyPrefix), consumer: JobQueue.consumerName(thread: -4))
        return (connection, queue)
    }

    private func connectPostgres() throws -> Ledger {
        var configuration = try settings.postgresConfiguration()
        configuration.connectTimeout = .seconds(2)
        configuration.callTimeout = .seconds(5)
        return Ledger(try PostgresConnection(configuration: configuration))
    }
}

/// The gauges, and the one counter read from Redis.
private struct Instruments: Sendable {
    let jobs: [(state: String, gauge: Gauge)]
    let oldestJobAge: Gauge
    let liveWorkers: Gauge
    let paused: Gauge
    let halted: Gauge
    let serverAPIHalted: Gauge
    let tokensGranted: Counter
    let outboxUnpublished: Gauge
    let outboxLag: Gauge
    let schedulerLastSuccess: Gauge

    init(factory: any MetricsFactory, rateLimit: Double) {
        func gauge(_ name: String, _ dimensions: [(String, String)] = []) -> Gauge {
            Gauge(label: name, dimensions: dimensions, factory: factory)
        }
        jobs = ["ready", "ready_high", "reserved", "delayed", "dead"].map { ($0, gauge(MetricName.jobs, [("state", $0)])) }
        oldestJobAge = gauge(MetricName.oldestJobAge)
        liveWorkers = gauge(MetricName.liveWorkers)
        paused = gauge(MetricName.fleetPaused)
        halted = gauge(MetricName.fleetHalted)
        serverAPIHalted = gauge(MetricName.serverAPIHalted)
        tokensGranted = Counter(label: MetricName.rateLimiterTokensGranted, factory: factory)
        outboxUnpublished = gauge(MetricName.outboxUnpublished)
        outboxLag = gauge(MetricName.outboxLag)
        schedulerLastSuccess = gauge(MetricName.schedulerLastSuccess)
        gauge(MetricName.rateLimit).record(rateLimit)
    }

    func record(_ reading: FleetReading) {
        if let stats = reading.queue {
            // The states part the jobs: `ready` is the ordinary stream, `ready_high` the high-priority one.
            let counts = [stats.ready - stats.readyHigh, stats.readyHigh, stats.reserved, stats.delayedDue + stats.delayedLater, stats.dead]
            for ((_, gauge), count) in zip(jobs, counts) { gauge.record(count) }
            oldestJobAge.record(stats.oldestReadyAge?.seconds ?? 0)
            liveWorkers.record(stats.liveWorkers)
            // Paused until a probe finds Apple back, also once the pause's time is up.
            paused.record(stats.pausedUntil == nil ? 0 : 1)
            halted.record(stats.haltedReason == nil ? 0 : 1)
            serverAPIHalted.record(reading.serverAPIHaltedReason == nil ? 0 : 1)
            tokensGranted.increment(by: reading.tokensGranted)
            schedulerLastSuccess.record(reading.lastSchedulerRun?.finishedAt?.timeIntervalSince1970 ?? 0)
        }
        if let outbox = reading.outbox {
            outboxUnpublished.record(outbox.unpublished)
            outboxLag.record(outbox.oldestAge ?? 0)
        }
    }
}
