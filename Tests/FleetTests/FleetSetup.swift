import AppStore
import AppStoreSimulator
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Ledger
import Logging
import Observability
import Operations
import PostgresClient
import TestSupport
import Testing

/// A fleet deployment of its own for one test: a database, a Redis prefix, settings pointing at a
/// live simulator, and the simulated receipts loaded into it. Works in-process (`work`) or through
/// real `receiptfleet` processes (`environment` is what they are started with).
struct FleetSetup: Sendable {
    let database: TestDatabase
    /// Tests may change them before `load`: a fleet reads them when it starts.
    var settings: FleetSettings
    let fleet: [SimulatedReceipt]
    /// The fleet's subscriptions this deployment holds.
    let subscriptions: [SimulatedSubscription]

    /// `receipts` simulated receipts with lifecycles around `nowMs`; with `boughtBy`, only the
    /// subscriptions already bought by then (a ledger never holds one before its purchase).
    init(
        database: TestDatabase, simulator: LiveSimulator, nowMs: Int64, receipts: Int, boughtBy: Int64? = nil,
        secret: String? = nil, rateLimit: Double = 5_000, visibilityTimeout: Duration = .seconds(5),
        drainGrace: Duration = .seconds(25), redisURL: String = TestServers.redisURL, postgresURL: String? = nil
    ) throws {
        self.database = database
        fleet = Self.receipts(receipts, nowMs: nowMs)
        subscriptions = fleet.flatMap(\.subscriptions).filter { subscription in
            boughtBy.map { subscription.groundTruth(at: $0).status != .invalid } ?? true
        }
        settings = try FleetSettings.forTest(
            redisURL: redisURL, postgresURL: postgresURL ?? database.url, keyPrefix: "{\(uniqueName("rff"))}",
            endpoints: AppStoreEndpoints(production: simulator.productionURL, sandbox: simulator.sandboxURL),
            sharedSecret: secret.map(SharedSecret.init), rateLimit: try RateLimit(perSecond: rateLimit, burst: 100),
            retryPolicy: try RetryPolicy(base: .milliseconds(50), cap: .milliseconds(200), maxAttempts: 5),
            concurrency: 4, visibilityTimeout: visibilityTimeout, drainGrace: drainGrace)
    }

    /// The seed of the simulated fleet: the simulator's Server API needs it to trace transaction ids back.
    static let seed: UInt64 = 5

    /// Reaches `simulator`'s Server API (started with `SimulatedServerAPI.simulation`), and asks it
    /// about every subscription that names no backend when `byDefault`.
    mutating func useServerAPI(of simulator: LiveSimulator, byDefault: Bool) throws {
        settings.serverAPI = try SimulatedServerAPI.settings(simulator)
        settings.defaultBackend = byDefault ? .serverAPI : .verifyReceipt
    }

    /// The simulated receipts a setup of `count` receipts around `nowMs` holds.
    static func receipts(_ count: Int, nowMs: Int64) -> [SimulatedReceipt] {
        SimulatedReceipt.fleet(count: count, seed: seed, anchorMs: nowMs)
    }

    /// The settings as a `receiptfleet` process reads them: its environment.
    var environment: [String: String] {
        settings.processEnvironment.merging([
            Settings.sharedSecret.variable: settings.sharedSecret?.value ?? "",
            Settings.rateLimit.variable: "\(settings.rateLimit.perSecond)",
            Settings.rateBurst.variable: "\(settings.rateLimit.burst)",
            Settings.retryBase.variable: "0.05",
            Settings.retryCap.variable: "0.2",
            Settings.retryMaxAttempts.variable: "\(settings.retryPolicy.maxAttempts)",
            Settings.concurrency.variable: "\(settings.concurrency)",
            Settings.jobsPerBatch.variable: "\(settings.jobsPerBatch)",
            Settings.visibilityTimeout.variable: "\(settings.visibilityTimeout.components.seconds)",
            Settings.drainGrace.variable: "\(settings.drainGrace.components.seconds)",
            // Several processes on one host: each takes a free port for its metrics.
            Settings.metricsAddress.variable: "127.0.0.1:0",
        ]) { $1 }
    }

    /// Migrates, adds every simulated subscription and schedules them all.
    func load(runID: String = "e2e") async throws -> ScheduleSummary {
        let subscriptions = subscriptions
        try await onOwnThread {
            let connection = try database.connect()
            try Migrator.migrate(connection)
            try Ledger(connection).addSubscriptions(subscriptions.map(\.newSubscription))
        }
        return try await schedule(runID: runID, now: Date())
    }

    /// One scheduler pass of night `runID`, as of `now`.
    func schedule(runID: String, now: Date) async throws -> ScheduleSummary {
        let settings = settings
        return try await onOwnThread { try Scheduler(settings: settings).run(Scheduler.Options(night: runID), now: now) }
    }

    /// Tonight, a month or more after the last run: the simulator's clock moves to now, every check
    /// planned since is due, and a worker pool runs them. Some must be due.
    func tonight(_ simulator: LiveSimulator) async throws -> FleetStatus {
        simulator.store.clock.set(nowMs: Int64(Date().timeIntervalSince1970 * 1000))
        let tonight = try await schedule(runID: "tonight", now: Date().addingTimeInterval(31 * 86_400))
        #expect(tonight.enqueued > 0)
        return try await work()
    }

    /// Every state is the truth of the moment Apple answered, and every subscription's events are
    /// exactly the truth's over the looks the fleet took.
    func expectTheTruth(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let mismatches = try await groundTruthMismatches()
        #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))", sourceLocation: sourceLocation)
        let events = try await eventMismatches()
        #expect(events.isEmpty, "\(events.count) of \(subscriptions.count) differ: \(events.prefix(10))", sourceLocation: sourceLocation)
    }

    /// Runs a worker pool in this process until `done` says so (or 60 s pass), then drains it; it
    /// records into `metrics`.
    func work(
        logger: Logger = Logger(label: "e2e"), metrics: ProcessMetrics = ProcessMetrics(),
        until done: @escaping @Sendable (FleetStatus) -> Bool = \.isSettled
    ) async throws -> FleetStatus {
        let worker = RunningServices.worker(settings: settings, metrics: metrics, logger: logger)
        do {
            let status = try await status(within: .seconds(60), until: done)
            try await worker.stop()
            return status
        } catch {
            try? await worker.stop()
            throw error
        }
    }

    /// Reads the fleet's status every 200 ms until `done` says so or `limit` passes; returns the
    /// last. A read that fails is tried again (a cluster resharding answers TRYAGAIN for a moment,
    /// as the workers see too); the error is thrown only if no read succeeds by the deadline.
    func status(within limit: Duration, until done: @escaping @Sendable (FleetStatus) -> Bool) async throws -> FleetStatus {
        let settings = settings
        var status: FleetStatus?
        // A reading that fails (a server still starting) is read again while the limit lasts.
        try await eventually(within: limit, every: .milliseconds(200)) {
            status = try? await onOwnThread { try FleetStatus.read(settings: settings) }
            return status.map(done) ?? false
        }
        if let status { return status }
        return try await onOwnThread { try FleetStatus.read(settings: settings) }
    }

    /// The subscriptions whose stored status differs from the simulator's truth at the moment
    /// they were verified (Apple's request_date, which the analysis stamps). Every one must have
    /// been verified.
    func groundTruthMismatches() async throws -> [String] {
        let stored = try await query("SELECT original_transaction_id, status, last_verified_at FROM subscriptions") {
            (try $0["original_transaction_id"].text() ?? "", (try $0["status"].text() ?? "", try $0["last_verified_at"].timestamptz()))
        }
        let rows = Dictionary(stored, uniquingKeysWith: { first, _ in first })
        return subscriptions.compactMap { subscription in
            guard let (status, verifiedAt) = rows[subscription.originalTransactionID], let verifiedAt else {
                return "\(subscription.receipt.kind): never verified"
            }
            let truth = subscription.groundTruth(at: Self.milliseconds(verifiedAt)).status
            return status == truth.rawValue ? nil : "\(subscription.receipt.kind): \(status) ≠ \(truth.rawValue)"
        }
    }

    /// The subscriptions whose announced events differ from the simulator's truth over the looks
    /// the fleet took at them (the verifications that wrote a state, at Apple's moment).
    func eventMismatches() async throws -> [String] {
        let looks = Dictionary(grouping: try await query("""
            SELECT s.original_transaction_id AS id, v.judged_at AS at, v.backend FROM verifications v
            JOIN subscriptions s ON s.id = v.subscription_id WHERE v.judged_at IS NOT NULL ORDER BY v.id
            """) {
                (try $0["id"].text() ?? "",
                 Look(at: Self.milliseconds(try $0["at"].timestamptz()), seesWholeHistory: try $0["backend"].text() == "server_api"))
            }, by: \.0)
        let announced = Dictionary(grouping: try await query("SELECT original_transaction_id AS id, type, occurred_at FROM events") {
            (try $0["id"].text() ?? "", ExpectedEvent(try $0["type"].text() ?? "", at: Self.milliseconds(try $0["occurred_at"].timestamptz())))
        }, by: \.0)
        return subscriptions.compactMap { subscription in
            let id = subscription.originalTransactionID
            let check = EventCheck(subscription, looks: looks[id]?.map(\.1) ?? [], announced: announced[id]?.map(\.1) ?? [])
            return check.passed ? nil : "\(subscription.receipt.kind): missing \(check.missing), extra \(check.extra)"
        }
    }

    /// A stored time in Apple's unit, milliseconds since 1970.
    static func milliseconds(_ date: Date?) -> Int64 {
        Int64(((date ?? .distantPast).timeIntervalSince1970 * 1000).rounded())
    }

    /// How many events of each (original_transaction_id, type) the ledger holds.
    func eventsBySubscriptionAndType() async throws -> [String: Int] {
        let rows = try await query("SELECT original_transaction_id || ' ' || type AS k, count(*) AS n FROM events GROUP BY 1") {
            (try $0["k"].text() ?? "", Int(try $0["n"].int64() ?? 0))
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    func eventCount() async throws -> Int {
        try await count("SELECT count(*) AS n FROM events")
    }

    /// Subscriptions with a verification attempt written by run `runID`.
    func verified(runID: String) async throws -> Int {
        try await count(
            "SELECT count(DISTINCT subscription_id) AS n FROM verifications WHERE run_id = '\(runID)' OR run_id LIKE '\(runID)/%'")
    }

    /// Runs one statement on the deployment's database.
    func execute(_ sql: String) async throws {
        let database = database
        try await onOwnThread { try database.connect().execute(sql) }
    }

    func count(_ sql: String) async throws -> Int {
        try await query(sql) { Int(try $0["n"].int64() ?? 0) }.first ?? 0
    }

    func query<T: Sendable>(_ sql: String, _ row: @escaping @Sendable (PostgresRow) throws -> T) async throws -> [T] {
        try await onOwnThread { try database.connect().query(sql).map(row) }
    }
}

extension FleetSetup {
    /// `receipts` receipts around now, loaded and scheduled, behind a simulator that serves the
    /// Server API too; `body` gets the environment a `receiptfleet` command runs with, its key and
    /// the simulator's root written to a directory of the test's own.
    static func withServerAPIKey(receipts: Int, _ body: (FleetSetup, [String: String]) async throws -> Void) async throws {
        let nowMs = FleetEndToEndTests.nowMs
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("server-api-key"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDatabase.with { database in
            try await ServerAPIFleetTests.simulator(startMs: nowMs, anchorMs: nowMs, receipts: receipts) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: receipts)
                _ = try await setup.load()
                try await body(setup, setup.environment.merging(try SimulatedServerAPI.environment(for: simulator, filesIn: directory)) { $1 })
            }
        }
    }
}

extension FleetStatus {
    /// No job waits, runs or is delayed: the run is over (dead letters aside).
    var isSettled: Bool {
        queue.outstanding == 0
    }
}
