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
import Testing

/// The whole fleet in one process: real Redis and PostgreSQL, the simulator over HTTP, the
/// scheduler and a worker pool; the results are checked against the simulator's ground truth.
@Suite struct FleetEndToEndTests {
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func everySubscriptionEndsAsTheSimulatorsGroundTruth() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 140)
                let scheduled = try await setup.load()
                let subscriptions = setup.subscriptions
                #expect(scheduled.enqueued == subscriptions.count)
                // A second pass the same night adds nothing.
                let again = try await onOwnThread { try Scheduler(settings: setup.settings).run(Scheduler.Options(night: "e2e"), now: Date()) }
                #expect(scheduled.passID == "e2e/1" && again.passID == "e2e/2")
                #expect(again.enqueued == 0 && again.alreadyQueued == subscriptions.count)

                let final = try await setup.work { status in
                    status.queue.outstanding == 0
                }
                #expect(final.queue.ready + final.queue.reserved + final.queue.delayedLater == 0, "every job settled")
                #expect(final.queue.dead == 0)

                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) of \(subscriptions.count) differ: \(mismatches.prefix(10))")
                // A first sight is a baseline: the only events are the receipts Apple refuses for good.
                let types = try await setup.query("SELECT DISTINCT type FROM events") { try $0["type"].text() }
                #expect(types == ["verification_failed"])
                let eventMismatches = try await setup.eventMismatches()
                #expect(eventMismatches.isEmpty, "\(eventMismatches.count) of \(subscriptions.count) differ: \(eventMismatches.prefix(10))")

                // The ledger's record of the night, brought up to date as the next pass does: the first
                // pass's jobs all verified, finished; the second had nothing to do.
                let settings = setup.settings
                let night = try await onOwnThread { () -> SchedulerNightRecord? in
                    try Scheduler(settings: settings).recordPassProgress(now: Date())
                    return try Ledger(PostgresConnection(configuration: settings.postgresConfiguration())).schedulerNights(limit: 1).first
                }
                let (verifications, events) = (try await setup.count("SELECT count(*) AS n FROM verifications"), try await setup.eventCount())
                #expect(night?.night == "e2e" && night?.passes.map(\.passID) == ["e2e/2", "e2e/1"])
                let pass = night?.passes.last
                let run = pass?.figures
                #expect(run?.due == subscriptions.count && run?.enqueued == subscriptions.count)
                #expect(run?.verified == subscriptions.count && run?.dead == 0)
                #expect(run?.finishedAt != nil && run?.finishedAt == pass?.lastSettledAt)
                #expect(run?.appleCalls == verifications && run?.events == events)
                let nothing = night?.passes.first?.figures
                #expect(nothing?.enqueued == 0 && nothing?.finishedAt == nothing?.startedAt)
                #expect(night?.appleCalls == verifications && night?.events == events && night?.countedTo == pass?.lastSettledAt)
            }
        }
    }

    /// A month ago every subscription is seen for the first time; tonight a month of renewals,
    /// refunds, expiries and plan changes has happened. The fleet's events must be exactly the ones
    /// the simulator's truth lists for each subscription between its two looks, none missing and
    /// none extra, and every state the truth of its moment.
    @Test func twoNightsAnnounceExactlyTheEventsOfTheMonthBetween() async throws {
        let nowMs = Self.nowMs
        let monthAgo = nowMs - 30 * 86_400_000
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: monthAgo) { simulator in
                let setup = try FleetSetup(
                    database: database, simulator: simulator, nowMs: nowMs, receipts: 140, boughtBy: monthAgo)
                let first = try await setup.load()
                _ = try await setup.work()
                let final = try await setup.tonight(simulator)
                #expect(final.queue.dead == 0)
                try await setup.expectTheTruth()
                // Tonight's pass, whose schedule clock is a month on, recorded how the first night's ended.
                let runs = try await setup.query("SELECT run_id, verified, finished_at IS NOT NULL AS finished FROM scheduler_passes ORDER BY id") {
                    "\(try $0["run_id"].text() ?? "") \(try $0["verified"].int64() ?? -1) \(try $0["finished"].bool() ?? false)"
                }
                #expect(runs.first == "e2e/1 \(first.enqueued) true", "\(runs)")
                let types = Set(try await setup.query("SELECT DISTINCT type FROM events") { try $0["type"].text() ?? "" })
                #expect(types.isSuperset(of: ["renewed", "refunded", "expired", "auto_renew_disabled", "plan_changed"]))
            }
        }
    }

    /// The simulator's clock stands half a minute behind the workers', and a sandbox subscription
    /// renews in between: Apple's answer shows the period before the renewal, which the workers
    /// read after it. Judged at the workers' time it would look expired; judged when Apple
    /// answered (its request_date), every state is the truth of that moment.
    @Test func statesAreJudgedWhenAppleAnsweredNotWhenTheWorkersReadTheAnswer() async throws {
        let nowMs = Self.nowMs
        let receipts = 140
        let renewal = try #require(
            Self.latestSandboxRenewal(before: nowMs, in: FleetSetup.receipts(receipts, nowMs: nowMs)),
            "the seeded fleet has a sandbox subscription that renewed in the last few minutes")
        let simulatorNow = renewal - 30_000
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: simulatorNow) { simulator in
                // Apple's clock stands still before the renewal: a slow machine must not carry it
                // past (CI once took longer than the 30 s between).
                simulator.store.clock.set(nowMs: simulatorNow, stopped: true)
                let setup = try FleetSetup(
                    database: database, simulator: simulator, nowMs: nowMs, receipts: receipts, boughtBy: simulatorNow)
                _ = try await setup.load()
                let final = try await setup.work()
                #expect(final.queue.dead == 0)
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) of \(setup.subscriptions.count) differ: \(mismatches.prefix(10))")
            }
        }
    }

    /// The latest moment before `nowMs` (by a second at least) at which one of `fleet`'s sandbox
    /// subscriptions renewed: paid up until then, and paid for a new period after.
    static func latestSandboxRenewal(before nowMs: Int64, in fleet: [SimulatedReceipt]) -> Int64? {
        fleet.filter { $0.kind == .sandbox }.flatMap(\.subscriptions).compactMap { subscription -> Int64? in
            let now = subscription.groundTruth(at: nowMs)
            guard now.status == .active, let expires = now.expiresAtMs else { return nil }
            let boundary = expires - 5 * 60_000  // a sandbox month
            let before = subscription.groundTruth(at: boundary - 1)
            guard boundary < nowMs - 1_000, before.status == .active, before.expiresAtMs == boundary else { return nil }
            return boundary
        }.max()
    }

    /// The deployment's one app halts (its secret is wrong); nothing else is halted.
    @Test func aWrongSharedSecretHaltsTheAppAndChangesNoSubscription() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(sharedSecret: "the-real-secret"), startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 20, secret: "a-wrong-secret")
                _ = try await setup.load()
                let log = CapturedLog()
                let logger = Logger(label: "e2e") { _ in log.handler }
                let final = try await setup.work(logger: logger) { $0.apps.contains { $0.haltedReason != nil } }
                #expect(final.apps.map(\.name) == ["default"] && final.apps[0].haltedReason?.contains("21004") == true)
                #expect(final.queue.haltedReason == nil && final.serverAPI.haltedReason == nil)
                // Before three different subscriptions agreed, the first two were buried alone (their
                // workers settle them after the batch, so look once the pool has stopped).
                let alone = setup.settings.haltAfterConfigurationErrors - 1
                let buried = try await setup.status(within: .seconds(10)) { $0.queue.dead >= alone }
                #expect(buried.queue.dead == alone)
                // The other workers must not judge: they postpone. (The pool has stopped, so what they did is written.)
                let stored = try await setup.query("SELECT DISTINCT status FROM subscriptions") { try $0["status"].text() }
                #expect(stored == ["unverified"], "no subscription was touched")
                #expect(try await setup.eventCount() == 0)
                // The alarm is loud, and carries neither the secret nor any receipt.
                let text = log.text
                #expect(text.contains("21004"))
                #expect(!text.contains("a-wrong-secret"))
                for receipt in setup.fleet { #expect(!text.contains(receipt.receiptData)) }
            }
        }
    }
}
