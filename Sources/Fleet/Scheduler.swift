import FleetConfiguration
import Lanes
import AppStore
import Foundation
import JobQueue
import Ledger
import Logging
import PostgresClient
import RedisClient

/// What one scheduler pass did.
public struct ScheduleSummary: Sendable, Codable, Equatable {
    /// Its run id (`SchedulerPassID`: `night/N`), which its jobs carry.
    public var passID: String
    /// Due subscriptions found.
    public var found = 0
    /// Jobs added to the queue.
    public var enqueued = 0
    /// Due subscriptions that already had a job in the queue, from this pass or an earlier one (a
    /// pass while the last one's jobs still wait, or are retried, adds nothing for them).
    public var alreadyQueued = 0
    /// Recent App Store notifications whose verification job was lost (with Redis, or by a crash
    /// before it was enqueued) and was enqueued again.
    public var notificationsRecovered = 0
    /// Active subscriptions of apps whose notifications do not arrive, brought forward to be
    /// checked nightly (`NotificationHealth`).
    public var checkedNightly = 0
    public var seconds = 0.0
    public var finishedAt: Date?

    enum CodingKeys: String, CodingKey {
        // The key an older version wrote, so that the last pass it recorded still reads.
        case passID = "run_id", found, enqueued, alreadyQueued = "already_queued"
        case notificationsRecovered = "notifications_recovered", checkedNightly = "checked_nightly", seconds, finishedAt = "finished_at"
    }
}

extension ScheduleSummary {
    /// The last finished pass, as the scheduler recorded it in Redis; nil before the first.
    public static func last(on redis: RedisConnection, keys: QueueKeys) throws -> ScheduleSummary? {
        try redis.command("GET", keys.schedulerLastRun).bytes.flatMap {
            try? JSONDecoder().decode(ScheduleSummary.self, from: Data($0))
        }
    }
}

public enum SchedulerError: Error, CustomStringConvertible {
    case alreadyRunning
    case lostLock

    public var description: String {
        switch self {
        case .alreadyRunning:
            "another scheduler is running (it holds the scheduler lock); wait for it, or if it died, for its lock to expire (1 minute)"
        case .lostLock:
            "the scheduler lock expired while this pass worked (Redis unreachable for a minute?); the jobs enqueued so far stay queued, run again"
        }
    }
}

/// Enqueues one job per due subscription: reads them from PostgreSQL in keyset pages and adds them
/// to the queue under the pass's own run id (`night/N`, the night's next number), skipping those
/// whose job is still queued from any pass. A Redis lock, renewed page by page, keeps two
/// schedulers from overlapping.
public final class Scheduler {
    public struct Options: Sendable {
        /// The night the pass counts in: the UTC date (`night(of:)`), or a run an operator names.
        public var night: String
        public var reason: Job.Reason = .nightly
        public var dryRun = false
        /// Stop after this many due subscriptions.
        public var limit: Int?
        public var environment: AppStoreEnvironment?
        public var pageSize = 10_000

        public init(night: String) { self.night = night }
    }

    private let ledger: Ledger
    private let queue: JobQueue
    private let lock: FleetLock
    private let redis: RedisConnection
    private let keys: QueueKeys
    private let metrics: FleetMetrics
    /// The deployment's apps, when active subscriptions are audited rather than checked nightly.
    private let auditedApps: [String]?

    public init(settings: FleetSettings, metrics: FleetMetrics = FleetMetrics()) throws {
        self.metrics = metrics
        auditedApps = settings.checkSchedule.auditInterval == nil ? nil : settings.apps.names
        redis = try RedisConnection(settings.redisConfiguration())
        keys = try QueueKeys(prefix: settings.keyPrefix)
        queue = try JobQueue(connection: redis, keys: keys, consumer: JobQueue.consumerName(thread: -2), clock: settings.scriptClock)
        lock = FleetLock("scheduler", connection: redis, keys: keys)
        ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
    }

    /// The night of a pass that starts at `now`: its UTC date.
    public static func night(of now: Date) -> String {
        String(Instant(now).description.prefix(10))
    }

    /// Runs one pass over everything due at `now`; `progress` is called after every page. The
    /// ledger records the pass as it starts (a dry run, nothing), its figures after every page.
    public func run(_ options: Options, now: Date, progress: (ScheduleSummary) -> Void = { _ in }) throws -> ScheduleSummary {
        try SchedulerPassID.validate(night: options.night)
        let lifetime = Duration.seconds(60)
        guard try lock.acquire(for: lifetime) else { throw SchedulerError.alreadyRunning }
        defer { try? lock.release() }
        let started = ContinuousClock.now
        let pass = try ledger.nextSchedulerPass(night: options.night)
        var summary = ScheduleSummary(passID: SchedulerPassID.make(night: options.night, pass: pass))
        // The database's clock, which stamped when notifications arrived.
        let databaseNow = try ledger.databaseTime()
        summary.notificationsRecovered = try recoverNotifications(options, databaseNow: databaseNow)
        // Before the pass starts, so that what it brings forward is due in this very pass.
        summary.checkedNightly = try judgeNotifications(options, now: now, databaseNow: databaseNow)
        // Workers may verify what this pass enqueued while it still pages; those rows are skipped.
        let passStarted = try ledger.databaseTime()
        if !options.dryRun {
            try ledger.beginSchedulerPass(passID: summary.passID, night: options.night, pass: pass, startedAt: passStarted)
        }
        var cursor: DueCursor?
        repeat {
            let wanted = min(options.pageSize, (options.limit ?? .max) - summary.found)
            guard wanted > 0 else { break }
            let page = try ledger.dueSubscriptions(
                now: now, after: cursor, limit: wanted, environment: options.environment, unchangedSince: passStarted)
            summary.found += page.subscriptions.count
            if !options.dryRun, !page.ids.isEmpty {
                let result = try queue.enqueue(subscriptionIDs: page.ids, run: summary.passID, reason: options.reason)
                summary.enqueued += result.added
                metrics.enqueued(result.added)
                summary.alreadyQueued += result.alreadyQueued
                try ledger.recordSchedulerPass(passID: summary.passID, due: summary.found, enqueued: summary.enqueued, ended: false)
            }
            cursor = page.next
            summary.seconds = started.duration(to: .now).seconds
            progress(summary)
            guard try lock.renew(for: lifetime) else { throw SchedulerError.lostLock }
        } while cursor != nil
        summary.finishedAt = now.addingTimeInterval(started.duration(to: .now).seconds)
        if !options.dryRun {
            let record = String(decoding: try JSONEncoder().encode(summary), as: UTF8.self)
            _ = try redis.command("SET", keys.schedulerLastRun, record)
            try ledger.recordSchedulerPass(passID: summary.passID, due: summary.found, enqueued: summary.enqueued, ended: true)
            // The database's clock: a pass's `now` is the schedule's, which demos and tests move.
            try recordPassProgress(now: passStarted)
        }
        return summary
    }

    /// Records in the ledger how the earlier passes stand (`SchedulerPasses.record`): each pass
    /// brings those still settling, and those a replayed dead letter opened again, up to date.
    public func recordPassProgress(now: Date) throws {
        try SchedulerPasses.record(ledger: ledger, queue: queue, now: now)
    }

    /// Judges each app's notification health over the last day (the database's, where changes and
    /// notifications are stamped), records the verdicts, and brings forward the active subscriptions
    /// of the apps checked nightly. Returns how many it brought forward.
    private func judgeNotifications(_ options: Options, now: Date, databaseNow: Date) throws -> Int {
        guard let apps = auditedApps, options.environment != .sandbox else { return 0 }
        let readings = try ledger.notificationReadings(within: NotificationHealth.window, databaseNow: databaseNow, now: now)
        let verdicts = apps.map { app in NotificationHealth.judge(app: app, readings.first { $0.app == app }) }
        guard !options.dryRun else { return 0 }
        try NotificationHealth.record(verdicts, on: redis, keys: keys)
        return try ledger.checkNightly(apps: verdicts.filter { !$0.notificationFirst }.map(\.app), now: now)
    }

    /// Enqueues again the job of every notification of the last `JobQueue.onceMemory` whose
    /// subscription has not been verified since it arrived. Each goes in under the notification's
    /// own once-key, as `serve` enqueued it, so a job still in the queue is not added twice; after a
    /// Redis loss (the once-keys gone with the jobs) they all come back. Returns how many were added.
    private func recoverNotifications(_ options: Options, databaseNow: Date) throws -> Int {
        let since = databaseNow.addingTimeInterval(-Double(JobQueue.onceMemory.components.seconds))
        let awaiting = try ledger.notificationsAwaitingVerification(since: since, environment: options.environment)
        guard !options.dryRun else { return awaiting.count }
        var added = 0
        for (notificationID, subscriptionID) in awaiting {
            let occurrence = "notification-\(notificationID)"
            if try queue.enqueue(subscriptionID: subscriptionID, run: occurrence, reason: .notification, once: occurrence) != nil {
                added += 1
            }
            try ledger.markJobEnqueued(notificationID: notificationID)
        }
        metrics.enqueued(added)
        return added
    }
}
