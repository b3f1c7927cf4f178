import AppStore
import AppStoreSimulator
import Fleet
import Foundation
import JobQueue
import Ledger
import Logging
import PostgresClient
import RedisClient
import TestSupport
import Synchronization
import Testing

/// The whole fleet in one process: real Redis and PostgreSQL, the simulator over HTTP, the
/// scheduler and a worker pool; the results are checked against the simulator's ground truth.
@Suite struct FleetEndToEndTests {
    /// A fleet deployment of its own: a database, a Redis prefix, the simulator's address.
    struct Setup: Sendable {
        let database: TestDatabase
        let settings: FleetSettings
        let fleet: [SimulatedReceipt]
        let nowMs: Int64

        init(database: TestDatabase, simulator: LiveSimulator, nowMs: Int64, receipts: Int, secret: String? = nil) throws {
            self.database = database
            self.nowMs = nowMs
            fleet = SimulatedReceipt.fleet(count: receipts, seed: 5, anchorMs: nowMs)
            settings = FleetSettings(
                redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("rff"))}",
                endpoints: AppStoreEndpoints(production: simulator.productionURL, sandbox: simulator.sandboxURL),
                sharedSecret: secret.map(SharedSecret.init), rateLimit: try RateLimit(perSecond: 5_000, burst: 100),
                retryPolicy: try RetryPolicy(base: .milliseconds(50), cap: .milliseconds(200), maxAttempts: 5),
                concurrency: 4, visibilityTimeout: .seconds(5))
        }

        /// Migrates, adds every simulated subscription and schedules them all.
        func load() async throws -> ScheduleSummary {
            let (settings, fleet) = (settings, fleet)
            return try await onOwnThread {
                let connection = try database.connect()
                try Migrator.migrate(connection)
                try Ledger(connection).addSubscriptions(fleet.flatMap { receipt in
                    receipt.subscriptions.map { subscription in
                        NewSubscription(
                            originalTransactionID: subscription.originalTransactionID,
                            environment: receipt.token.environment == .sandbox ? .sandbox : .production,
                            receipt: ReceiptData(base64: receipt.receiptData))
                    }
                })
                return try Scheduler(settings: settings).run(Scheduler.Options(runID: "e2e"), now: Date())
            }
        }

        /// Runs a worker pool until `done` says so (or 60 s pass), then drains it.
        func work(
            logger: Logger = Logger(label: "e2e"), until done: @escaping @Sendable (FleetStatus) -> Bool
        ) async throws -> FleetStatus {
            let settings = settings
            let pool = WorkerPool(settings: settings, logger: logger)
            pool.start()
            defer { pool.drain(grace: .seconds(10)) }
            let deadline = ContinuousClock.now + .seconds(60)
            while true {
                let status = try await onOwnThread { try FleetStatus.read(settings: settings) }
                if done(status) || ContinuousClock.now > deadline { return status }
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        /// Each subscription's stored status, by original_transaction_id.
        func storedStatuses() async throws -> [String: String] {
            try await onOwnThread {
                let rows = try database.connect().query("SELECT original_transaction_id, status FROM subscriptions")
                return Dictionary(uniqueKeysWithValues: try rows.map {
                    (try $0["original_transaction_id"].text() ?? "", try $0["status"].text() ?? "")
                })
            }
        }

        func eventCount() async throws -> (all: Int, distinct: Int) {
            try await onOwnThread {
                let row = try database.connect().query("SELECT count(*) AS n, count(DISTINCT id) AS d FROM events")[0]
                return (Int(try row["n"].int64() ?? 0), Int(try row["d"].int64() ?? 0))
            }
        }
    }

    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func everySubscriptionEndsAsTheSimulatorsGroundTruth() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try Setup(database: database, simulator: simulator, nowMs: nowMs, receipts: 140)
                let scheduled = try await setup.load()
                let subscriptions = setup.fleet.flatMap(\.subscriptions)
                #expect(scheduled.enqueued == subscriptions.count)
                // A second run the same night adds nothing.
                let again = try await onOwnThread { try Scheduler(settings: setup.settings).run(Scheduler.Options(runID: "e2e"), now: Date()) }
                #expect(again.enqueued == 0 && again.alreadyQueued == subscriptions.count)

                let final = try await setup.work { status in
                    status.queue.ready + status.queue.reserved + status.queue.delayedDue + status.queue.delayedLater == 0
                }
                #expect(final.queue.ready + final.queue.reserved + final.queue.delayedLater == 0, "every job settled")
                #expect(final.queue.dead == 0)

                let stored = try await setup.storedStatuses()
                let nowForTruth = nowMs
                var mismatches: [String] = []
                for subscription in subscriptions {
                    let truth = subscription.groundTruth(at: nowForTruth).status.rawValue
                    let actual = stored[subscription.originalTransactionID] ?? "missing"
                    if actual != truth { mismatches.append("\(subscription.receipt.kind): \(actual) ≠ \(truth)") }
                }
                #expect(mismatches.isEmpty, "\(mismatches.count) of \(subscriptions.count) differ: \(mismatches.prefix(10))")
                let events = try await setup.eventCount()
                #expect(events.all == events.distinct, "no duplicate events")
            }
        }
    }

    @Test func aWrongSharedSecretHaltsTheFleetAndChangesNoSubscription() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(sharedSecret: "the-real-secret"), startMs: nowMs) { simulator in
                let setup = try Setup(database: database, simulator: simulator, nowMs: nowMs, receipts: 20, secret: "a-wrong-secret")
                _ = try await setup.load()
                let log = CapturedLog()
                let logger = Logger(label: "e2e") { _ in log.handler }
                let final = try await setup.work(logger: logger) { $0.queue.haltedReason != nil }
                #expect(final.queue.haltedReason?.contains("21004") == true)
                // Give the other workers a moment: they must postpone, not judge.
                try await Task.sleep(for: .seconds(1))
                let stored = try await setup.storedStatuses()
                #expect(Set(stored.values) == ["unverified"], "no subscription was touched")
                #expect(try await setup.eventCount().all == 0)
                // The alarm is loud, and carries neither the secret nor any receipt.
                let text = log.text
                #expect(text.contains("21004"))
                #expect(!text.contains("a-wrong-secret"))
                for receipt in setup.fleet { #expect(!text.contains(receipt.receiptData)) }
            }
        }
    }
}

/// The lines logged through `handler`s, metadata included, for tests that read the logs.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    /// A log handler writing here; each logger gets its own, as swift-log expects.
    var handler: Handler { Handler(log: self) }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            log.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}
