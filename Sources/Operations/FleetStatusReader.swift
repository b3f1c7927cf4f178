import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Ledger
import PostgresClient
import RedisClient

/// Reads `FleetStatus` on connections of its own, made when first needed and again after a
/// failure to connect (a broken connection reconnects by itself). Blocking: call it from a
/// thread of its own (a `Lane`), never from Swift's cooperative pool.
public final class FleetStatusReader {
    /// How much to read: `live` is cheap enough for every metrics scrape and every page refresh
    /// (Redis, and PostgreSQL through indexes); `full` adds the whole-table counts of `status`.
    public enum Scope: Sendable {
        case live, full
    }

    private let settings: FleetSettings
    /// The process's clock: "the last minute" is the deployment's (shifted in drills and benchmarks).
    private let clock: any FleetClock
    private let timeouts: (connect: Duration, command: Duration)?
    private var redis: (connection: RedisConnection, queue: JobQueue)?
    private var ledger: Ledger?

    /// `quick`: short timeouts, for a scrape or a probe that must answer within seconds, reachable or not.
    public init(settings: FleetSettings, clock: any FleetClock, quick: Bool = false) {
        self.settings = settings
        self.clock = clock
        timeouts = quick ? (.seconds(2), .seconds(5)) : nil
    }

    /// One reading. A source that does not answer leaves its part out and says why in `problems`.
    public func read(_ scope: Scope) -> FleetReading {
        let now = clock.now()
        var reading = FleetReading(appNames: settings.apps.names)
        do {
            reading.redisSide = try readRedis()
        } catch {
            redis = nil
            reading.problems.append("cannot read Redis: \(error)")
        }
        do {
            reading.ledgerSide = try readLedger(scope, now: now)
        } catch {
            ledger = nil
            reading.problems.append("cannot read PostgreSQL: \(error)")
        }
        return reading
    }

    private func readRedis() throws -> FleetReading.RedisSide {
        let (connection, queue) = try redis ?? connectRedis()
        redis = (connection, queue)
        let stats = try queue.stats()
        let lastRun = try ScheduleSummary.last(on: connection, keys: queue.keys)
        let isSilent = { (process: WorkerProcess) in process.silentFor >= Heartbeat.silentAfter }
        let silent = try queue.processes(holdingJobs: isSilent).filter(isSilent)
            .map { FleetStatus.SilentWorker($0, visibilityTimeout: settings.visibilityTimeout) }
        var throttled: [String: Double] = [:]
        for budget in settings.serverAPIBudgets {
            if let ms = try connection.command("PTTL", queue.keys.throttled(budget.name)).int, ms > 0 {
                throttled[budget.name] = Double(ms) / 1000
            }
        }
        return FleetReading.RedisSide(
            queue: FleetStatus.Queue(jobs: stats.jobs, state: FleetStatus.Queue.State(
                oldestJobAgeSeconds: stats.oldestJobAge?.seconds, liveWorkers: stats.liveWorkers,
                consumers: stats.consumers.count,
                starvedWorkers: try queue.starvedWorkers().filter { starved in !silent.contains { $0.process == starved.process } },
                silentWorkers: silent,
                pausedUntil: stats.pausedUntil.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                haltedReason: stats.haltedReason, jobsDone: stats.jobsDone, jobsRetried: stats.jobsRetried, jobsDied: stats.jobsDied)),
            rateLimit: FleetStatus.RateLimitReading(perSecond: settings.rateLimit.perSecond, tokensGranted: stats.limiterGranted),
            serverAPI: FleetStatus.ServerAPIGate(
                haltedReason: try connection.command("GET", queue.keys.halted(FleetSettings.serverAPIGroup)).string,
                throttledSeconds: throttled),
            schedules: try NotificationHealth.last(on: connection, keys: queue.keys),
            haltedApps: try settings.apps.names.reduce(into: [:]) { halted, app in
                halted[app] = try connection.command("GET", queue.keys.halted(app: app)).string
            },
            lastSchedulerRun: lastRun, lastRunTally: try lastRun.flatMap { try queue.tally(ofRun: $0.passID) })
    }

    private func readLedger(_ scope: Scope, now: Date) throws -> FleetReading.LedgerSide {
        let ledger = try self.ledger ?? connectPostgres()
        self.ledger = ledger
        let backlog = try ledger.outboxBacklog(now: now)
        var side = FleetReading.LedgerSide(
            outbox: FleetStatus.Outbox(unpublished: backlog.unpublished, oldestUnpublishedAgeSeconds: backlog.oldestAge),
            verifiedLastMinute: try ledger.verifiedCounts(since: now - 60),
            appleStatusLastMinute: try ledger.appleStatusMix(since: now - 60))
        if scope == .full {
            let counts = try ledger.counts(now: now, since: now - 3_600)
            (side.subscriptions, side.dueNow, side.eventsLastHour) = (counts.subscriptionsByApp, counts.dueNow, counts.eventsByType)
        }
        side.consumptionRequestsNearingDeadline = try ledger.consumptionRequestsNearingDeadline(
            now: now, within: ConsumptionResponder.nearingDeadline)
        side.lastNotificationRecovery = try ledger.latestAudited("notifications.recover").map {
            FleetStatus.NotificationRecovery(
                at: $0.at, found: Int($0.details["found"] ?? "") ?? 0, new: Int($0.details["new"] ?? "") ?? 0, outcome: $0.outcome)
        }
        return side
    }

    private func connectRedis() throws -> (RedisConnection, JobQueue) {
        var configuration = try settings.redisConfiguration()
        if let timeouts {
            configuration.connectTimeout = timeouts.connect
            configuration.commandTimeout = timeouts.command
        }
        let connection = try RedisConnection(configuration)
        let queue = try JobQueue(
            connection: connection, keys: QueueKeys(prefix: settings.keyPrefix), consumer: JobQueue.consumerName(thread: -4),
            clock: settings.scriptClock)
        return (connection, queue)
    }

    private func connectPostgres() throws -> Ledger {
        var configuration = try settings.postgresConfiguration()
        if let timeouts {
            configuration.connectTimeout = timeouts.connect
            configuration.callTimeout = timeouts.command
        }
        return Ledger(try PostgresConnection(configuration: configuration))
    }
}

/// One reading of the fleet, in its two halves: what Redis holds and what PostgreSQL holds. A
/// half whose server did not answer is nil.
public struct FleetReading: Sendable {
    public struct RedisSide: Sendable {
        public var queue: FleetStatus.Queue
        public var rateLimit: FleetStatus.RateLimitReading
        public var serverAPI: FleetStatus.ServerAPIGate
        /// Each app's schedule, as the last scheduler pass judged its notifications.
        public var schedules: [NotificationHealth]
        /// The halted apps' reasons, by name.
        public var haltedApps: [String: String]
        public var lastSchedulerRun: ScheduleSummary?
        public var lastRunTally: RunTally?
    }

    public struct LedgerSide: Sendable {
        public var outbox: FleetStatus.Outbox
        /// By app.
        public var verifiedLastMinute: [String: Int]
        public var appleStatusLastMinute: [String: Int]
        /// By app, then status.
        public var subscriptions: [String: [String: Int]]?
        public var dueNow: Int?
        public var eventsLastHour: [String: Int]?
        public var lastNotificationRecovery: FleetStatus.NotificationRecovery?
        /// Consumption requests pending within `ConsumptionResponder.nearingDeadline` of Apple's deadline.
        public var consumptionRequestsNearingDeadline: Int?
    }

    public var redisSide: RedisSide?
    public var ledgerSide: LedgerSide?
    /// The configured apps, each shown even when it has nothing yet.
    public var appNames: [String] = []
    /// What could not be read, for people; never holds a password.
    public var problems: [String] = []

    /// The whole status, or an error naming what could not be read.
    public func status() throws(FleetUnreadable) -> FleetStatus {
        guard let redisSide, let ledgerSide else { throw FleetUnreadable(problems: problems) }
        let byApp = ledgerSide.subscriptions
        let names = Set(appNames).union(ledgerSide.verifiedLastMinute.keys).union(byApp.map { Array($0.keys) } ?? [])
        let apps = names.sorted().map { name in
            FleetStatus.AppStatus(
                name: name, haltedReason: redisSide.haltedApps[name], verifiedLastMinute: ledgerSide.verifiedLastMinute[name] ?? 0,
                subscriptions: byApp.map { $0[name] ?? [:] }, schedule: redisSide.schedules.first { $0.app == name })
        }
        return FleetStatus(
            queue: redisSide.queue, rateLimit: redisSide.rateLimit, serverAPI: redisSide.serverAPI,
            lastSchedulerRun: redisSide.lastSchedulerRun, lastRunTally: redisSide.lastRunTally, verifiedLastMinute: apps.reduce(0) { $0 + $1.verifiedLastMinute },
            appleStatusLastMinute: ledgerSide.appleStatusLastMinute, apps: apps,
            outbox: ledgerSide.outbox,
            subscriptions: byApp.map(LedgerCounts.total),
            dueNow: ledgerSide.dueNow, eventsLastHour: ledgerSide.eventsLastHour,
            lastNotificationRecovery: ledgerSide.lastNotificationRecovery)
    }
}

/// The fleet's status could not be read: Redis or PostgreSQL did not answer.
public struct FleetUnreadable: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var description: String { problems.joined(separator: "; ") }
}
