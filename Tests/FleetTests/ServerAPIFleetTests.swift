import AppStore
import AppStoreSimulator
import Fleet
import Crypto
import Foundation
import JobQueue
import Ledger
import PostgresClient
import RedisClient
import TestSupport
import Testing

/// The fleet on the App Store Server API: the same scheduler, queue, workers and ledger, asking by
/// original transaction id instead of by receipt, against the simulator's Server API over HTTP;
/// checked against the simulator's ground truth as the verifyReceipt suites are.
@Suite struct ServerAPIFleetTests {
    /// A simulator that serves the Server API too, for the fleet `FleetSetup` draws around `anchorMs`.
    static func simulator<T: Sendable>(
        startMs: Int64, anchorMs: Int64, knobs: FaultKnobs = FaultKnobs(), receipts: Int = 0, _ body: (LiveSimulator) async throws -> T
    ) async throws -> T {
        try await LiveSimulator.with(
            knobs: knobs, startMs: startMs,
            serverAPI: SimulatedServerAPI.simulation(seed: FleetSetup.seed, anchorMs: anchorMs, subscriptions: receipts), body)
    }

    /// Moves every other subscription (by id) to the Server API; returns how many moved.
    static func moveHalf(_ setup: FleetSetup) async throws -> Int {
        let settings = setup.settings
        return try await onOwnThread {
            let ledger = try Ledger(PostgresConnection(configuration: settings.postgresConfiguration()))
            let ids = try ledger.connection.query("SELECT id FROM subscriptions WHERE id % 2 = 0").map { try $0["id"].int64() ?? 0 }
            return try ledger.moveBackend(to: .serverAPI, BackendSelection(ids: ids)).moved
        }
    }

    /// Apple answers the Server API with 429 when the fleet calls it faster than it allows: only
    /// that endpoint's budget waits for Retry-After, verifyReceipt goes on, the fleet never
    /// pauses, and no job is charged for it (none dead, every state true).
    @Test func appleRateLimitingTheServerAPIHoldsOnlyItsEndpoints() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            // Apple allows 5 requests a second; verifyReceipt's own 20 a second keep every second
            // above that while they run (the simulator counts them, and refuses only the Server API's).
            try await Self.simulator(startMs: nowMs, anchorMs: nowMs, knobs: FaultKnobs(rateLimit: 5)) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 40)
                try setup.useServerAPI(of: simulator, byDefault: false)
                setup.settings.rateLimit = try RateLimit(perSecond: 20, burst: 1)
                setup.settings.serverAPI?.rateLimit = try RateLimit(perSecond: 400, burst: 20)  // far above Apple's
                _ = try await setup.load()
                #expect(try await Self.moveHalf(setup) > 0)
                let final = try await setup.work()
                #expect(final.isSettled && final.queue.dead == 0 && final.queue.haltedReason == nil)
                try await setup.expectTheTruth()
                let throttled = try await setup.count("SELECT count(*) AS n FROM verifications WHERE http_status = 429")
                #expect(throttled > 0, "Apple answered 429")
                let keys = try QueueKeys(prefix: setup.settings.keyPrefix)
                let paused = try await onOwnThread { [settings = setup.settings] in
                    try RedisConnection(settings.redisConfiguration()).command("EXISTS", keys.pauseFailures).int
                }
                #expect(paused == 0, "the fleet never paused")
            }
        }
    }

    /// Two apps on the Server API with the account's one key: each app's subscriptions are asked
    /// about with tokens naming that app (the simulator answers only about the token's app), and
    /// every state is the truth.
    @Test func eachAppIsAskedAboutWithATokenOfItsOwn() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(
                startMs: nowMs, serverAPI: SimulatedServerAPI.simulation(seed: FleetSetup.seed, journalSeed: FleetSetup.journalSeed, anchorMs: nowMs)
            ) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 30)
                try setup.useServerAPI(of: simulator, byDefault: true)
                setup.settings.apps = try FleetSetup.twoApps()
                let journal = try await setup.addJournal(receipts: 30, nowMs: nowMs)
                _ = try await setup.load()
                let final = try await setup.work()
                #expect(final.isSettled && final.serverAPI.haltedReason == nil && final.queue.haltedReason == nil)
                try await setup.expectTheTruth()
                let wrong = try await setup.journalMismatches(journal)
                #expect(wrong.isEmpty, "\(wrong.count) of the journal's \(journal.count) subscriptions are not the truth: \(wrong.prefix(5))")
                #expect(try await setup.count("SELECT count(*) AS n FROM verifications WHERE backend = 'server_api'") > 0)
            }
        }
    }

    /// Apple refusing the Server API's key (401) halts the Server API alone, with the key id in the
    /// alarm: verifyReceipt's subscriptions are all verified, the Server API's wait (none dead),
    /// `status` says so, and `resume` (with the key fixed) lets them through.
    @Test func aRefusedKeyHaltsOnlyTheServerAPI() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await Self.simulator(startMs: nowMs, anchorMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 40)
                try setup.useServerAPI(of: simulator, byDefault: false)
                let good = try #require(setup.settings.serverAPI)
                setup.settings.serverAPI?.key = try ServerAPIKey(
                    issuerID: "simulated-issuer", keyID: "REVOKED1", bundleID: ServerAPISimulation.bundleID,
                    pem: P256.Signing.PrivateKey().pemRepresentation)
                _ = try await setup.load()
                let moved = try await Self.moveHalf(setup)
                let onReceipts = setup.subscriptions.count - moved
                // Nothing left but the Server API's postponed jobs (a retry of verifyReceipt's waits a moment too).
                let stalled = try await setup.work { status in
                    status.serverAPI.haltedReason != nil && status.queue.ready + status.queue.reserved + status.queue.delayedDue == 0
                        && status.queue.delayedLater == moved
                }
                #expect(stalled.queue.haltedReason == nil, "verifyReceipt is not halted")
                #expect(stalled.serverAPI.haltedReason?.contains("REVOKED1") == true, "\(String(describing: stalled.serverAPI.haltedReason))")
                #expect(stalled.queue.dead == 0)
                #expect(try await setup.count("SELECT count(*) AS n FROM subscriptions WHERE backend IS NULL AND last_verified_at IS NOT NULL")
                        == onReceipts)

                setup.settings.serverAPI = good
                let resumed = try await onOwnThread { [settings = setup.settings] in try resumeFleet(settings: settings) }
                // No worker runs between the two readings: what the halt postponed is due now, not a wait later.
                let afterResume = try await setup.status(within: .seconds(5)) { _ in true }
                #expect(afterResume.queue.delayedLater == 0 && resumed.broughtForward > 0,
                        "\(afterResume.queue.delayedLater) jobs still wait; \(resumed.broughtForward) brought forward")
                let final = try await setup.work()
                #expect(final.isSettled && final.queue.dead == 0 && final.serverAPI.haltedReason == nil)
                try await setup.expectTheTruth()
            }
        }
    }



    /// A month ago every subscription is seen for the first time; tonight a month of renewals,
    /// refunds, expiries and plan changes has happened. Asked through the Server API only (no
    /// receipt is ever sent), every state is the truth of its moment and the events are exactly
    /// the truth's between the two looks; and a quiet night after costs about one call a subscription.
    @Test func nightsThroughTheServerAPIAnnounceExactlyTheMonthsEventsAndAQuietOneCostsOneCall() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        let monthAgo = nowMs - 30 * 86_400_000
        try await TestDatabase.with { database in
            try await Self.simulator(startMs: monthAgo, anchorMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 140, boughtBy: monthAgo)
                try setup.useServerAPI(of: simulator, byDefault: true)
                // verifyReceipt must not be asked: its URLs lead nowhere.
                setup.settings.endpoints = AppStoreEndpoints(production: "http://127.0.0.1:9/none", sandbox: "http://127.0.0.1:9/none")
                _ = try await setup.load()
                _ = try await setup.work()
                let final = try await setup.tonight(simulator)
                #expect(final.queue.dead == 0 && final.queue.haltedReason == nil)
                try await setup.expectTheTruth()
                let types = Set(try await setup.query("SELECT DISTINCT type FROM events") { try $0["type"].text() ?? "" })
                #expect(types.isSuperset(of: ["renewed", "refunded", "expired", "auto_renew_disabled", "plan_changed"]))
                let backends = try await setup.query("SELECT DISTINCT backend FROM verifications") { try $0["backend"].text() }
                #expect(backends == ["server_api"])

                // Tomorrow, a quiet night: few latest transactions changed in a day, so most
                // subscriptions cost Apple one call; a seventh of them read their refunded transactions
                // too (which seventh, and so the share of a hundred, moves with the date), and the few
                // whose latest transaction changed that day read their history: at most a tenth more.
                let calledBefore = simulator.store.statistics.requestsTotal
                simulator.store.clock.set(nowMs: Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000)
                let tomorrow = try await setup.schedule(runID: "tomorrow", now: Date().addingTimeInterval(32 * 86_400))
                let quiet = try await setup.work()
                #expect(quiet.queue.dead == 0)
                let calls = Double(simulator.store.statistics.requestsTotal - calledBefore) / Double(tomorrow.enqueued)
                #expect(tomorrow.enqueued > 50 && calls < 1 + 1.0 / 7 + 0.1, "\(calls) calls a verification over \(tomorrow.enqueued)")
                try await setup.expectTheTruth()
            }
        }
    }

    /// The fleet is on verifyReceipt; mid-month, while the workers run a night's checks, an
    /// operator moves every subscription to the Server API. Each subscription's events over the
    /// month (its looks through either backend) are exactly the truth's: none lost at the move,
    /// none announced twice.
    @Test func aFleetMovedToTheServerAPIMidMonthLosesAndDoublesNoEvent() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        let day: Int64 = 86_400_000
        let monthAgo = nowMs - 30 * day
        try await TestDatabase.with { database in
            try await Self.simulator(startMs: monthAgo, anchorMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 140, boughtBy: monthAgo)
                try setup.useServerAPI(of: simulator, byDefault: false)
                _ = try await setup.load()
                _ = try await setup.work()

                // Mid-month: a night's checks run, slowly enough that the move happens while they do.
                simulator.store.clock.set(nowMs: nowMs - 15 * day)
                setup.settings.rateLimit = try RateLimit(perSecond: 30, burst: 1)
                let midMonth = try await setup.schedule(runID: "mid-month", now: Date().addingTimeInterval(16 * 86_400))
                let (settings, nightly) = (setup.settings, setup)
                let moved = try await withThrowingTaskGroup(of: Int.self) { group in
                    group.addTask {
                        _ = try await nightly.work()
                        return 0
                    }
                    group.addTask {
                        // Once some of the night's checks are done, the rest go through the move.
                        _ = try await nightly.status(within: .seconds(30)) { $0.queue.ready < midMonth.enqueued * 3 / 4 }
                        return try await onOwnThread {
                            let ledger = try Ledger(PostgresConnection(configuration: settings.postgresConfiguration()))
                            return try ledger.moveBackend(to: .serverAPI, BackendSelection(), pageSize: 40).moved
                        }
                    }
                    return try await group.reduce(0, +)
                }
                #expect(moved == setup.subscriptions.count)

                let final = try await setup.tonight(simulator)
                #expect(final.queue.dead == 0)
                try await setup.expectTheTruth()
                let doubled = try await setup.count("""
                    SELECT count(*) AS n FROM (SELECT 1 FROM events GROUP BY subscription_id, type, occurred_at HAVING count(*) > 1) d
                    """)
                #expect(doubled == 0)
                let byBackend = Dictionary(uniqueKeysWithValues: try await setup.query(
                    "SELECT backend, count(*) AS n FROM verifications WHERE run_id LIKE 'mid-month/%' GROUP BY backend"
                ) { (try $0["backend"].text() ?? "", Int(try $0["n"].int64() ?? 0)) })
                #expect(byBackend["verify_receipt", default: 0] > 0 && byBackend["server_api", default: 0] > 0,
                        "the night's checks went through both backends: \(byBackend)")
                let tonight = try await setup.query("SELECT DISTINCT backend FROM verifications WHERE run_id LIKE 'tonight/%'") { try $0["backend"].text() }
                #expect(tonight == ["server_api"])
            }
        }
    }

    /// As an operator runs it: the key and the simulator's root from files, `config check`
    /// showing them (never the key), `subscriptions set-backend` refusing to move anything before
    /// the key is configured and then moving every subscription, and a `receiptfleet worker`
    /// process verifying them all through the Server API.
    @Test func anOperatorMovesTheFleetAndAWorkerProcessVerifiesItThroughTheServerAPI() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("server-api"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = SimulatedServerAPI.privateKey.pemRepresentation
        try await TestDatabase.with { database in
            try await Self.simulator(startMs: nowMs, anchorMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 40)
                // Every subscription is due and queued; a job reads its subscription's backend when it runs.
                _ = try await setup.load()
                let serverAPI = setup.environment.merging(try SimulatedServerAPI.environment(for: simulator, filesIn: directory)) { $1 }

                let refused = try await runFleetCommand(["subscriptions", "set-backend", "server-api", "--all"], environment: setup.environment)
                #expect(refused.status != 0 && refused.output.contains("The Server API has no key configured here"), "\(refused.output)")
                let halfKey = try await runFleetCommand(
                    ["config", "check"], environment: setup.environment.merging(["RECEIPTFLEET_SERVER_API_KEY_ID": "SIMKEY"]) { $1 })
                #expect(halfKey.status != 0)
                #expect(halfKey.output.contains("set without server-api-issuer-id and server-api-key-file"), "\(halfKey.output)")
                let checked = try await runFleetCommand(["config", "check"], environment: serverAPI)
                #expect(checked.status == 0, "\(checked.output)")
                #expect(checked.output.contains("key id SIMKEY, issuer simulated-issuer, app \(ServerAPISimulation.bundleID) (key masked)"))
                #expect(!checked.output.contains(pem.split(separator: "\n")[1]), "the key never prints")

                let dry = try await runFleetCommand(["subscriptions", "set-backend", "server-api", "--all", "--dry-run"], environment: serverAPI)
                #expect(dry.output.contains("Would move \(setup.subscriptions.count) subscription(s) to server-api."), "\(dry.output)")
                let moved = try await runFleetCommand(["subscriptions", "set-backend", "server-api", "--all"], environment: serverAPI)
                #expect(moved.output.contains("Moved \(setup.subscriptions.count) subscription(s) to server-api."), "\(moved.output)")

                let worker = try FleetProcess(["worker"], environment: serverAPI)
                let final = try await setup.status(within: .seconds(60)) { $0.isSettled }
                worker.send(SIGTERM)
                #expect(try await worker.exitStatus(within: .seconds(30)) == 0)
                #expect(final.isSettled && final.queue.dead == 0 && final.queue.haltedReason == nil, "\(worker.log)")
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")
                let backends = try await setup.query("SELECT DISTINCT backend FROM verifications") { try $0["backend"].text() }
                #expect(backends == ["server_api"])

                let id = try #require(try await setup.query("SELECT min(id) AS id FROM subscriptions") { try $0["id"].int64() }.first ?? nil)
                let shown = try await runFleetCommand(["subscriptions", "show", "\(id)"], environment: serverAPI)
                #expect(shown.output.contains("backend       server-api"), "\(shown.output)")
            }
        }
    }
}
