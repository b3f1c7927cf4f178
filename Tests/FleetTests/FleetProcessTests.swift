import AppStore
import AppStoreSimulator
import Fleet
import Foundation
import JobQueue
import Ledger
import RedisClient
import TestSupport
import Testing

/// The fleet as people run it: real `receiptfleet` processes against real Redis, PostgreSQL and the
/// simulator over HTTP, killed, stopped and starved of Apple, and checked against the simulator's
/// ground truth afterwards.
@Suite struct FleetProcessTests {
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A deployment is fed its receipts twice: once seen 30 days ago (a baseline), once now (so
    /// renewals, refunds, expiries … become events), the second time through worker processes, one
    /// of which is SIGKILLed holding jobs. It must end with the simulator's truth: every state, and
    /// every event the truth counts over the looks the fleet took, none missing and none twice.
    @Test func aKilledWorkerLosesNoJobAndDuplicatesNoEvent() async throws {
        let nowMs = Self.nowMs
        let monthAgo = nowMs - 30 * 86_400_000
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: monthAgo) { simulator in
                let chaos = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 200, boughtBy: monthAgo)
                _ = try await chaos.load(runID: "then")
                // The worker processes take the baseline too: they are up when the run begins.
                let first = try FleetProcess(["worker"], environment: chaos.environment)
                let second = try FleetProcess(["worker"], environment: chaos.environment)
                #expect(try await chaos.status(within: .seconds(60)) { $0.isSettled }.isSettled)
                simulator.store.clock.set(nowMs: Self.nowMs)
                let due = Date().addingTimeInterval(400 * 86_400)  // everything is due by then
                // 20 ms per answer from now on: the run takes long enough for a worker to die in the middle of it.
                try simulator.store.setKnobs(FaultKnobs(latency: Latency(meanMs: 20)))
                #expect(try await chaos.schedule(runID: "now", now: due).enqueued == chaos.subscriptions.count)
                // Killed as soon as it holds jobs of the run, at the first reading that says so.
                let (settings, pid) = (chaos.settings, first.pid)
                let held = try await onOwnThread { () -> Int in
                    let queue = try JobQueue(
                        connection: RedisConnection(RedisConfiguration(url: settings.redisURL)),
                        keys: QueueKeys(prefix: settings.keyPrefix), consumer: "fleet-process-test")
                    var held = 0
                    _ = try eventuallyOnThisThread(every: .milliseconds(10)) {
                        held = try queue.stats().consumers.filter { $0.name.contains("-\(pid)-") }.map(\.reserved).reduce(0, +)
                        return held > 0
                    }
                    kill(pid, SIGKILL)
                    return held
                }
                #expect(held > 0, "the killed worker held jobs: they must be reclaimed")
                #expect(try await first.exitStatus(within: .seconds(5)) != nil)
                // The rest of the run needs no slow Apple: what is measured is that nothing is lost.
                try simulator.store.setKnobs(FaultKnobs())
                let replacement = try FleetProcess(["worker"], environment: chaos.environment)
                let final = try await chaos.status(within: .seconds(90)) { $0.isSettled }
                #expect(final.isSettled, "the killed worker's jobs were reclaimed and finished")
                #expect(final.queue.dead == 0)
                for process in [second, replacement] { process.send(SIGTERM) }
                try await chaos.expectTheTruth()
                for process in [second, replacement] { #expect(try await process.exitStatus(within: .seconds(30)) == 0) }
                #expect([second, replacement].contains { $0.log.contains("reclaimed the jobs of a worker that stopped answering") })
                let types = Set(try await chaos.eventsBySubscriptionAndType().keys.map { $0.split(separator: " ")[1] })
                #expect(types.count >= 4, "the run found changes of several kinds: \(types)")
            }
        }
    }

    /// SIGTERM: the worker stops reserving, finishes what it holds, leaves nothing reserved,
    /// deregisters and exits 0; another worker finishes the run. Meanwhile `status` agrees with
    /// what Redis and PostgreSQL hold.
    @Test func aTerminatedWorkerDrainsAndStatusAgreesWithTheDatabase() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(latency: Latency(meanMs: 200)), startMs: nowMs) { simulator in
                let setup = try FleetSetup(
                    database: database, simulator: simulator, nowMs: nowMs, receipts: 120,
                    visibilityTimeout: .seconds(120), drainGrace: .seconds(10))
                _ = try await setup.load()
                let worker = try FleetProcess(["worker"], environment: setup.environment)
                try #require(try await eventually(every: .milliseconds(100)) { try await setup.verified(runID: "e2e") >= 8 })
                let held = try await setup.status(within: .zero) { _ in true }.queue.reserved
                worker.send(SIGTERM)
                #expect(try await worker.exitStatus(within: .seconds(12)) == 0)
                #expect(worker.log.contains("stopped cleanly"))
                let after = try await setup.status(within: .zero) { _ in true }
                #expect(held > 0, "the worker held jobs when it was told to stop")
                #expect(after.queue.reserved == 0, "nothing is left reserved: no job waits for the visibility timeout")
                #expect(after.queue.consumers == 0, "the worker deregistered")
                #expect(after.queue.ready + after.queue.delayedDue > 0, "the run is unfinished")

                let reported = try await runFleetCommand(["status", "--json"], environment: setup.environment)
                #expect(reported.status == 0)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(reported.output.utf8)) as? [String: Any])
                let queue = try #require(json["queue"] as? [String: Any])
                let redis = try RedisConnection(RedisConfiguration(url: setup.settings.redisURL))
                let keys = try QueueKeys(prefix: setup.settings.keyPrefix)
                let streams = try [keys.ready, keys.readyHigh].map { try redis.command("XLEN", $0).int ?? -1 }.reduce(0, +)
                #expect((queue["ready"] as? Int ?? -1) + (queue["reserved"] as? Int ?? -1) == Int(streams))
                let delayed = try redis.command("ZCARD", keys.delayed).int ?? -1
                #expect((queue["delayedDue"] as? Int ?? -1) + (queue["delayedLater"] as? Int ?? -1) == Int(delayed))
                #expect(queue["dead"] as? Int == Int(try redis.command("XLEN", keys.dead).int ?? -1))
                let byStatus = try await setup.query("SELECT status, count(*) AS n FROM subscriptions GROUP BY 1") {
                    (try $0["status"].text() ?? "", Int(try $0["n"].int64() ?? 0))
                }
                #expect(json["subscriptions"] as? [String: Int] == Dictionary(uniqueKeysWithValues: byStatus))

                // The drain is measured; the rest of the run needs no slow Apple.
                try simulator.store.setKnobs(FaultKnobs())
                let finisher = try FleetProcess(["worker"], environment: setup.environment)
                #expect(try await setup.status(within: .seconds(60)) { $0.isSettled }.isSettled)
                finisher.send(SIGTERM)
                #expect(try await finisher.exitStatus(within: .seconds(15)) == 0)
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")
            }
        }
    }

    /// Apple answers 21005 to everything for a while: the whole fleet pauses, sends Apple no more
    /// than a probe at a time, and completes the run once Apple is back, with no job charged.
    @Test func anAppleOutagePausesTheFleetAndTheRunCompletesAfterwards() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            // 100 ms an answer: the 2 × 4 threads make 80 calls a second, and most of the run is left when Apple goes down.
            try await LiveSimulator.with(knobs: FaultKnobs(latency: Latency(meanMs: 100)), startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 120)
                _ = try await setup.load()
                let workers = try (0..<2).map { _ in try FleetProcess(["worker"], environment: setup.environment) }
                try #require(try await eventually(every: .milliseconds(100)) { try await setup.verified(runID: "e2e") >= 10 })
                let left = try await setup.status(within: .zero) { _ in true }.queue
                // As long as the first pause (2 s): the probe after it finds Apple back.
                simulator.store.startOutage(seconds: 2)
                // The workers' own word, not a status read: the pause lasts about 2 s, and a loaded
                // machine can read the status less often than that.
                let paused = try await eventually(within: .seconds(10), every: .milliseconds(100)) {
                    workers.contains { $0.log.contains("Apple is unavailable; the fleet pauses") }
                }
                #expect(paused, "the fleet paused")
                let waiting = left.ready + left.reserved + left.delayedDue + left.delayedLater
                #expect(waiting >= setup.subscriptions.count / 3, "\(waiting) of \(setup.subscriptions.count) waited for Apple")

                let final = try await setup.status(within: .seconds(90)) { $0.isSettled }
                #expect(final.isSettled)
                // Every call of the outage was answered 21005: the 8 threads' calls in flight when the
                // pause began, and no more. Without the pause, the threads would have made 160.
                let unavailable = simulator.store.statistics.byStatus["21005"] ?? 0
                #expect(unavailable <= 20, "\(unavailable) calls answered 21005: only probes may go during a pause")
                #expect(final.queue.dead == 0, "waiting for Apple charged no job an attempt")
                for worker in workers { worker.send(SIGTERM) }
                for worker in workers { #expect(try await worker.exitStatus(within: .seconds(30)) == 0) }
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")
            }
        }
    }

    /// Threads waiting for the rate limit each book a time slot and sleep until it, instead of
    /// asking Redis every few milliseconds: at 64 threads and 20 calls/s the gate is asked about once
    /// per call. And every request Apple sees took a token, redirects to the sandbox included.
    @Test func waitingForTheRateLimitCostsRedisAboutOneAdmissionPerCall() async throws {
        try await Self.withACrowdedFleet { setup, simulator in
            // Imported without knowing their environment: the sandbox's receipts are redirected there.
            _ = try await setup.count("WITH moved AS (UPDATE subscriptions SET environment = 'Production' RETURNING 1) "
                                      + "SELECT count(*) AS n FROM moved")
            let worker = try FleetProcess(["worker"], environment: setup.environment)
            func redirects() -> Int {
                let statistics = simulator.store.statistics
                return (statistics.byStatus["21007"] ?? 0) + (statistics.byStatus["21008"] ?? 0)
            }
            // The rate is measured from the first call Apple sees: how long a process takes to start
            // depends on the machine's load (two seconds and more when other suites share it).
            try await eventually { simulator.store.statistics.requestsTotal > 0 }
            let started = ContinuousClock.now
            // Over at least three seconds' calls at the limit, and until a receipt of the sandbox was
            // redirected there (its threads' turns come in a few seconds).
            try await eventually(within: .seconds(30), every: .milliseconds(100)) {
                simulator.store.statistics.requestsTotal >= 60 && redirects() > 0
            }
            let seconds = Int(started.duration(to: .now).seconds.rounded(.down))
            worker.send(SIGTERM)
            #expect(try await worker.exitStatus(within: .seconds(30)) == 0)

            let redis = try RedisConnection(RedisConfiguration(url: setup.settings.redisURL))
            let keys = try QueueKeys(prefix: setup.settings.keyPrefix)
            let granted = try #require(try redis.command("GET", keys.limiterGranted).string.flatMap { Int($0) })
            let admissions = try #require(try redis.command("GET", keys.gateAdmissions).string.flatMap { Int($0) })
            #expect(granted >= 20 * (seconds - 1), "the fleet ran at its rate: \(granted) tokens in \(seconds) s of calls")
            // Asking every few ms, as waiting threads did before slots, cost over 1,000 admissions/s here.
            #expect(admissions <= 2 * granted + 20 * seconds, "\(admissions) admissions for \(granted) tokens")
            let requests = simulator.store.statistics.requestsTotal
            #expect(redirects() > 0, "a receipt was redirected, so redirects were counted against the limit")
            #expect(requests <= granted, "\(requests) requests, \(granted) tokens")
        }
    }

    /// 450 receipts loaded for one worker of 64 threads under a limit of 20/s: enough jobs that
    /// nearly every thread holds a batch of 8 and waits for its turn.
    static func withACrowdedFleet(_ body: @escaping @Sendable (FleetSetup, LiveSimulator) async throws -> Void) async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 450)
                setup.settings.rateLimit = try RateLimit(perSecond: 20, burst: 1)
                setup.settings.concurrency = 64
                setup.settings.jobsPerBatch = 8
                _ = try await setup.load()
                try await body(setup, simulator)
            }
        }
    }

    /// A worker process stopped for seconds (SIGSTOP, as a starved container or a noisy neighbour
    /// would) holds slots booked for up to 3.2 s ahead in its 64 threads. When it is continued, every
    /// slot has passed: firing them all would put about 64 calls in one second for a limit of 20.
    /// The threads give them up instead, book new ones, and `status` names the starved process.
    @Test func aWorkerThatWakesLateGivesUpItsSlotsInsteadOfFiringThemTogether() async throws {
        try await Self.withACrowdedFleet { setup, simulator in
            let worker = try FleetProcess(["worker"], environment: setup.environment)
            let (settings, pid) = (setup.settings, worker.pid)
            let stopped = try await onOwnThread { () -> (booked: Bool, passed: Bool) in
                let redis = try RedisConnection(RedisConfiguration(url: settings.redisURL))
                let limiter = try QueueKeys(prefix: settings.keyPrefix).limiter
                // The limiter's next token (its state) lies beyond every slot booked: 2.5 s ahead, 50 of
                // the 64 threads wait for theirs (on a loaded machine a fixed wait could stop the
                // worker before all its threads started).
                func beyondEverySlot() throws -> Int64? { try redis.command("GET", limiter).string.flatMap { Int64($0) } }
                let booked = try eventuallyOnThisThread(every: .milliseconds(10)) {
                    try beyondEverySlot().map { $0 - (try redis.redisMicroseconds()) >= 2_500_000 } ?? false
                }
                guard booked else { return (false, false) }
                // Stopped until every slot it booked has passed on Redis's clock, each a call that
                // would fire at once on waking.
                kill(pid, SIGSTOP)
                guard let beyond = try beyondEverySlot() else { return (true, false) }
                return (true, try eventuallyOnThisThread(every: .milliseconds(50)) { try redis.redisMicroseconds() > beyond + 500_000 })
            }
            try #require(stopped.booked, "the worker's threads booked their slots")
            let passed = stopped.passed
            try #require(passed, "the stopped worker's slots passed on Redis's clock")
            simulator.store.resetStatistics()
            worker.send(SIGCONT)
            // The two seconds' calls after it wakes are the ones measured.
            try await eventually(every: .milliseconds(100)) { simulator.store.statistics.requestsTotal >= 40 }
            let busiest = simulator.store.statistics.maxRequestsInOneSecond
            let status = try await setup.status(within: .seconds(15)) { !$0.queue.starvedWorkers.isEmpty }
            worker.send(SIGTERM)
            #expect(try await worker.exitStatus(within: .seconds(30)) == 0)

            // The limit and its burst, the calls up to `slotTolerance` late, and the clumps of a loaded
            // machine (23 seen beside the other suites): far from the 64 that firing every slot would send.
            #expect(busiest <= 32, "\(busiest) requests in the busiest second after the worker woke, for a limit of 20")
            let starved = try #require(status.queue.starvedWorkers.first, "status names no starved worker")
            #expect(status.queue.starvedWorkers.count == 1)
            #expect(starved.slotsGivenUp >= 20, "\(starved.slotsGivenUp) slots given up")
            #expect(starved.process.contains("-\(worker.pid)-"), "\(starved.process) is the stopped worker")
            let reported = try await runFleetCommand(["status"], environment: setup.environment).output
            let line = reported.split(separator: "\n").first { $0.hasPrefix("starved") }
            #expect(line?.contains("\(starved.process) gave up ") == true, "\(reported)")
            #expect(line?.contains("rate-limit slots") == true && line?.contains("fewer threads") == true, "\(reported)")
        }
    }

    /// Apple answers slowly: a worker thread holds its job for 6 s (a batch of one: slower than a
    /// second), over the 5 s visibility timeout, while the threads left without a job look for jobs
    /// to reclaim. The holders' leases are renewed, so no job is taken from a live worker: Apple is
    /// asked once per job, and none is delivered again and again until it dies "stalled".
    @Test func aSlowAppleNeverMakesALiveWorkersJobsRunTwice() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(latency: Latency(meanMs: 6_000)), startMs: nowMs) { simulator in
                let setup = try FleetSetup(
                    database: database, simulator: simulator, nowMs: nowMs, receipts: 5, visibilityTimeout: .seconds(5))
                // Fewer jobs than the 2 × 4 threads: some threads are free to reclaim.
                #expect(setup.subscriptions.count >= 4 && setup.subscriptions.count < 8)
                _ = try await setup.load()
                let workers = try (0..<2).map { _ in try FleetProcess(["worker"], environment: setup.environment) }
                let final = try await setup.status(within: .seconds(90)) { $0.isSettled }
                for worker in workers { worker.send(SIGTERM) }
                for worker in workers { #expect(try await worker.exitStatus(within: .seconds(30)) == 0) }
                #expect(final.isSettled)
                #expect(final.queue.dead == 0, "no job died as stalled")

                let statistics = simulator.store.statistics
                // A receipt of the other environment is asked twice by design: once to learn where it lives.
                let redirects = (statistics.byStatus["21007"] ?? 0) + (statistics.byStatus["21008"] ?? 0)
                // And a malformed receipt is asked again, as its answer says, until its attempts run out.
                let retries = try await setup.count("SELECT count(*) AS n FROM verifications WHERE outcome = 'retryable'")
                #expect(statistics.requestsTotal - redirects == setup.subscriptions.count + retries, "Apple was asked once per attempt")
                #expect(try await setup.count("SELECT count(*) AS n FROM verifications WHERE outcome <> 'retryable'")
                    == setup.subscriptions.count, "one verdict per job")
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")
            }
        }
    }

    /// A worker thread reserves at most jobs-per-batch jobs at once: Apple answering in 50 ms, the
    /// one thread would verify 20 in a second, and holds at most 3 at a time.
    @Test func aThreadReservesAtMostJobsPerBatch() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(latency: Latency(meanMs: 50)), startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 24)
                setup.settings.concurrency = 1
                setup.settings.jobsPerBatch = 3
                // A rate far above the thread's 2 a second: a loaded machine's late slots never cut a batch short.
                setup.settings.rateLimit = try RateLimit(perSecond: 1_000, burst: 10)
                _ = try await setup.load()
                let settings = setup.settings
                let worker = try FleetProcess(["worker"], environment: setup.environment)
                // Read every few milliseconds over one connection (a reading is one script), so that
                // a loaded machine still sees the 3 held for each batch's first call.
                let held = try await onOwnThread {
                    let queue = try JobQueue(
                        connection: RedisConnection(RedisConfiguration(url: settings.redisURL)),
                        keys: QueueKeys(prefix: settings.keyPrefix), consumer: "batch-test")
                    var held: Set<Int> = []
                    _ = try eventuallyOnThisThread(within: .seconds(60), every: .milliseconds(5)) {
                        let stats = try queue.stats()
                        held.insert(stats.reserved)
                        return stats.outstanding == 0
                    }
                    return held
                }
                worker.send(SIGTERM)
                #expect(try await worker.exitStatus(within: .seconds(30)) == 0)
                // Never more than the limit. How close a batch comes to it follows the thread's pace (a batch is
                // what it finishes in about a second, `SlotBookingTests`): alone, 3 are held; beside the other
                // suites a starved process's calls take seconds, and it holds one at a time.
                #expect((1...3).contains(held.max() ?? 0), "jobs held at once: \(held.sorted())")
            }
        }
    }

    /// `receiptfleet verify ID` verifies one subscription at once, outside the queue, and refuses
    /// to call Apple while the fleet is halted.
    @Test func verifyChecksOneSubscriptionNowAndRespectsAHalt() async throws {
        let nowMs = Self.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 3)
                _ = try await setup.load()
                let gate = FleetGate(
                    connection: try RedisConnection(RedisConfiguration(url: setup.settings.redisURL)),
                    keys: try QueueKeys(prefix: setup.settings.keyPrefix), limit: setup.settings.rateLimit)
                try gate.halt(reason: "maintenance window")
                let subscription = try #require(setup.subscriptions.first)
                let verify = ["verify", "--original-transaction-id", subscription.originalTransactionID]
                let refused = try await runFleetCommand(verify, environment: setup.environment)
                #expect(refused.status == 3)
                #expect(refused.output.contains("halted (maintenance window)"))
                #expect(simulator.store.statistics.requestsTotal == 0, "a halted fleet sends Apple nothing")

                try gate.resume()
                let verified = try await runFleetCommand(verify, environment: setup.environment)
                #expect(verified.status == 0, "\(verified.output)")
                let truth = subscription.groundTruth(at: Self.nowMs).status.rawValue
                #expect(verified.output.contains("status        \(truth)"))
                #expect(verified.output.contains("result        done: verified"))
                let stored = try await setup.query(
                    "SELECT status FROM subscriptions WHERE original_transaction_id = '\(subscription.originalTransactionID)'"
                ) { try $0["status"].text() }
                #expect(stored == [truth])
                #expect(simulator.store.statistics.requestsTotal >= 1)
                // The command's calls joined the fleet's timings (the Timings page), as a worker's do.
                let redis = try RedisConnection(RedisConfiguration(url: setup.settings.redisURL))
                let hours = try FleetTimings(connection: redis, keys: try QueueKeys(prefix: setup.settings.keyPrefix))
                    .read(.hour, last: 2, at: Int64(Date().timeIntervalSince1970 * 1000))
                let timed = hours.compactMap { $0.timings[AppleEndpoint.verifyReceipt.rawValue]?.count }.reduce(0, +)
                #expect(timed >= 1, "verify's call to Apple is in the fleet's timings")
            }
        }
    }
}
