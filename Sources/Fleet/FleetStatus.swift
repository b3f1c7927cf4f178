import Lanes
import Foundation
import JobQueue
import Ledger
import PostgresClient
import RedisClient

/// Everything `receiptfleet status` shows, read from Redis and PostgreSQL themselves, so every
/// process that asks sees the same truth.
public struct FleetStatus: Sendable, Encodable {
    public var queue: Queue
    public var subscriptions: [String: Int]
    public var dueNow: Int
    /// Verifications in the last minute, and the Apple status mix among them.
    public var verifiedLastMinute: Int
    public var appleStatusLastMinute: [String: Int]
    public var eventsLastHour: [String: Int]
    public var outbox: Outbox
    public var lastSchedulerRun: ScheduleSummary?
    public var serverAPI: ServerAPIGate

    /// The App Store Server API's part of the gate: its own halt, and its endpoints' budgets that
    /// Apple's 429 spent, with the seconds left.
    public struct ServerAPIGate: Sendable, Encodable {
        public var haltedReason: String?
        public var throttledSeconds: [String: Double]
    }

    public struct Queue: Sendable, Encodable {
        public var ready: Int
        public var readyHigh: Int
        public var reserved: Int
        public var delayedDue: Int
        public var delayedLater: Int
        public var dead: Int
        public var oldestReadyAgeSeconds: Double?
        public var liveWorkers: Int
        public var consumers: Int
        public var pausedUntil: Date?
        public var haltedReason: String?
    }

    public struct Outbox: Sendable, Encodable {
        public var unpublished: Int
        public var oldestUnpublishedAgeSeconds: Double?
    }

    /// Reads the status now.
    public static func read(settings: FleetSettings) throws -> FleetStatus {
        let redis = try RedisConnection(settings.redisConfiguration())
        let keys = try QueueKeys(prefix: settings.keyPrefix)
        let queue = try JobQueue(connection: redis, keys: keys, consumer: JobQueue.consumerName(thread: -3))
        let stats = try queue.stats()
        let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
        let now = Date()
        let counts = try ledger.counts(now: now, since: now - 3_600)
        let lastRun = try ScheduleSummary.last(on: redis, keys: keys)
        return FleetStatus(
            queue: Queue(
                ready: stats.ready, readyHigh: stats.readyHigh, reserved: stats.reserved,
                delayedDue: stats.delayedDue, delayedLater: stats.delayedLater, dead: stats.dead,
                oldestReadyAgeSeconds: stats.oldestReadyAge?.seconds, liveWorkers: stats.liveWorkers,
                consumers: stats.consumers.count,
                pausedUntil: stats.pausedUntil.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                haltedReason: stats.haltedReason),
            subscriptions: counts.subscriptionsByStatus,
            dueNow: counts.dueNow,
            verifiedLastMinute: try ledger.counts(now: now, since: now - 60).verifiedSince,
            appleStatusLastMinute: try ledger.appleStatusMix(since: now - 60),
            eventsLastHour: counts.eventsByType,
            outbox: Outbox(unpublished: counts.unpublishedEvents, oldestUnpublishedAgeSeconds: counts.oldestUnpublishedAge),
            lastSchedulerRun: lastRun,
            serverAPI: try serverAPIGate(redis, keys, settings))
    }

    private static func serverAPIGate(_ redis: RedisConnection, _ keys: QueueKeys, _ settings: FleetSettings) throws -> ServerAPIGate {
        let halted = try redis.command("GET", keys.halted(FleetSettings.serverAPIGroup)).string
        var throttled: [String: Double] = [:]
        for budget in settings.serverAPIBudgets {
            if let ms = try redis.command("PTTL", keys.throttled(budget.name)).int, ms > 0 { throttled[budget.name] = Double(ms) / 1000 }
        }
        return ServerAPIGate(haltedReason: halted, throttledSeconds: throttled)
    }
}
