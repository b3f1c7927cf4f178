import AppStore
import AppStoreSimulator
import FleetConfiguration
import Foundation
import HTTPClient
import JobQueue
import Ledger
import RedisClient
import TestSupport
import Testing

/// The light form of `benchmarks/run freshness`: a deployment on the notification-first schedule
/// (the in-process serve, `schedule` and `notifications recover` each simulated night, a worker
/// process) lives eight days on the shifted clock while the simulator announces its fleet's
/// changes, a share of the sends failing and a share never announced. Every change serve missed
/// is found in time (a failed send within a day, an unannounced one within the audit period), the
/// states end as Apple's truth but for changes still within that time, no event is written twice,
/// and the calls cost a fraction of checking everyone nightly.
@Suite struct FreshnessTests {
    static let day: Int64 = 86_400_000
    static let days = 8
    static let auditDays = 3
    static let receipts = 200

    @Test func notificationFirstFindsEveryChangeInTimeAtAFractionOfTheCalls() async throws {
        let root = try SimulatorSigningChain().root
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("freshness"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await APIHarness.with(
            configure: { $0.trustedRoots.append(root); $0.notificationEnvironments = [.production, .sandbox] },
            configureFleet: {
                $0.scriptClock = .shifted
                $0.defaultBackend = .serverAPI
                $0.checkSchedule.auditInterval = Double(Self.auditDays) * 86_400
            },
            serverAPI: true, serverAPIFleet: Self.receipts
        ) { api in
            let store = api.simulator.store
            let environment = api.fleet.processEnvironment
                .merging(try SimulatedServerAPI.environment(for: api.simulator, filesIn: directory)) { $1 }
                .merging([Settings.notificationEnvironments.variable: "Production,Sandbox", Settings.backend.variable: "server-api",
                          Settings.auditDays.variable: "\(Self.auditDays)", Settings.rateLimit.variable: "1000"]) { $1 }
            let subscriptions = (0..<Self.receipts).flatMap { api.receipt(index: $0).subscriptions }
            let database = api.database
            try await onOwnThread { try Ledger(database.connect()).addSubscriptions(subscriptions.map(\.newSubscription)) }
            #expect(try await runFleetCommand(["schedule", "--run-id", "first"], environment: environment).status == 0)
            let worker = try FleetProcess(["worker"], environment: environment)
            defer { worker.send(SIGKILL) }
            try await Self.waitUntilIdle(api)

            try store.sendNotifications(
                to: api.baseURL + "/v1/notifications/apple", knobs: NotificationKnobs(failShare: 0.3, unannouncedShare: 0.1))
            let callsBefore = store.statistics.byEndpoint.values.reduce(0, +)
            // Each simulated night: when it began (real time) and where the simulator's clock ended it.
            var nights: [(began: Date, clockMs: Int64)] = [(Date(), store.clock.nowMs)]
            for night in 1...Self.days {
                nights.append((Date(), store.clock.nowMs + Self.day))
                try await Self.shift(api, byDays: night)
                store.clock.advance(byMs: Self.day)
                await store.sendDueNotifications()
                for command in [["schedule", "--run-id", "night-\(night)"], ["notifications", "recover", "--since", "8d", "--only-failures", "--resume"]] {
                    let ran = try await runFleetCommand(command, environment: environment)
                    #expect(ran.status == 0, "\(command): \(ran.output)")
                }
                try await Self.waitUntilIdle(api)
            }
            let calls = store.statistics.byEndpoint.values.reduce(0, +) - callsBefore

            // Each change serve missed, and the night the fleet first wrote an event of its subscription after it.
            let missed = try await Self.missed(api)
            let written = try await api.rows(
                "SELECT s.original_transaction_id AS id, extract(epoch FROM e.created_at)::float8 AS at FROM events e "
                    + "JOIN subscriptions s ON s.id = e.subscription_id") { (try $0["id"].text() ?? "", try $0["at"].double() ?? 0) }
            let nowMs = store.clock.nowMs
            let truth = Dictionary(uniqueKeysWithValues: subscriptions.map { ($0.originalTransactionID, $0.groundTruth(at: nowMs).status.rawValue) })
            let stored = Dictionary(uniqueKeysWithValues: try await api.rows("SELECT original_transaction_id AS id, status FROM subscriptions") {
                (try $0["id"].text() ?? "", try $0["status"].text() ?? "")
            })
            let night = { (moment: Date) in nights.lastIndex { $0.began <= moment } ?? 0 }
            var late: [String] = []
            var stillFresh: Set<String> = []
            // A refund and its reversal both missed cancel out: the fleet's state was right all along, and
            // there is nothing of either to find.
            let cancelled = Set(missed.filter { $0.type == "REFUND_REVERSED" }.flatMap { reversal in
                missed.filter { $0.id == reversal.id && $0.type == "REFUND" && $0.atMs < reversal.atMs }.isEmpty ? [] : [reversal.id]
            })
            for change in missed where !(cancelled.contains(change.id) && ["REFUND", "REFUND_REVERSED"].contains(change.type)) {
                let happened = nights.firstIndex { change.atMs <= $0.clockMs } ?? nights.count
                // Nights are whole days: found the night it happened is within 24 hours.
                let allowed = change.why == "send_failed" ? 0 : Self.auditDays
                let found = written.filter { $0.0 == change.id && $0.1 >= nights[happened].began.timeIntervalSince1970 }
                    .map { night(Date(timeIntervalSince1970: $0.1)) }.min()
                if let found, found - happened <= allowed { continue }
                if happened + allowed > Self.days || stored[change.id] == truth[change.id] && found == nil {
                    stillFresh.insert(change.id)  // its time has not run out, or nothing of it remains to find
                    continue
                }
                late.append("\(change.why) \(change.type) on night \(happened), found on night \(found.map(String.init) ?? "never")")
            }
            #expect(missed.contains { $0.why == "send_failed" } && missed.contains { $0.why == "unannounced" }, "\(missed.count)")
            #expect(late.isEmpty, "\(late.count) of \(missed.count) missed changes found late: \(late.prefix(8))")
            let differing = stored.filter { truth[$0.key] != nil && truth[$0.key] != $0.value && !stillFresh.contains($0.key) }
            #expect(differing.isEmpty, "states differing from Apple's truth: \(differing.prefix(8))")
            #expect(try await api.count(
                "SELECT count(*) AS n FROM (SELECT 1 FROM events GROUP BY subscription_id, type, occurred_at HAVING count(*) > 1) d") == 0)
            // Nightly passes check an active subscription on its audit night (and when its renewal went
            // unannounced), about once in K nights; the seeds' way checked it every night.
            let active = try await api.count("SELECT count(*) AS n FROM subscriptions WHERE status = 'active'")
            let activeChecks = try await api.count(
                "SELECT count(*) AS n FROM verifications v JOIN subscriptions s ON s.id = v.subscription_id "
                    + "WHERE s.status = 'active' AND v.run_id LIKE 'night-%'")
            let perNight = Double(activeChecks) / Double(active * Self.days)
            #expect(active > 40 && perNight < 1.5 / Double(Self.auditDays),
                    "\(activeChecks) nightly checks of \(active) active subscriptions in \(Self.days) nights; \(calls) calls to Apple in all")
        }
    }

    /// The fleet's processes read the real time plus this shift (`shifted-clock`).
    static func shift(_ api: APIHarness, byDays days: Int) async throws {
        let (url, prefix) = (api.fleet.redisURL, api.fleet.keyPrefix)
        try await onOwnThread {
            let redis = try RedisConnection(RedisConfiguration(url: url))
            _ = try redis.command("SET", try QueueKeys(prefix: prefix).timeShift, Int64(days) * 86_400_000_000)
        }
    }

    /// Until no job waits or runs (a later retry may wait).
    static func waitUntilIdle(_ api: APIHarness) async throws {
        let idle = try await eventually(within: .seconds(60), every: .milliseconds(100)) {
            let jobs = try await api.jobs()
            return jobs.ready + jobs.reserved + jobs.delayedDue == 0
        }
        #expect(idle, "the fleet did not finish its work within a minute")
    }

    struct Missed: Sendable {
        let id: String
        let type: String
        let atMs: Int64
        let why: String
    }

    /// The simulator's list of the changes serve was not told of when they happened.
    static func missed(_ api: APIHarness) async throws -> [Missed] {
        let url = "http://127.0.0.1:\(api.simulator.port)/control/notifications/missed"
        let body = try await onOwnThread { try HTTPClient().get(url: url).body }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        return try #require(object["missed"] as? [[String: Any]]).map {
            Missed(id: $0["original_transaction_id"] as? String ?? "", type: $0["type"] as? String ?? "",
                   atMs: ($0["at_ms"] as? NSNumber)?.int64Value ?? 0, why: $0["why"] as? String ?? "")
        }
    }
}
