import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Queue stats and consumers")
struct StatsTests {
    @Test("stats agree with what was done: ready, reserved, delayed, dead, oldest age, consumers, gate")
    func statsAgree() async throws {
        let (empty, stats) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("worker-1", retryPolicy: try RetryPolicy(base: .seconds(3600), cap: .seconds(3600), maxAttempts: 5), on: connection)
            let empty = try queue.stats()
            try queue.enqueue(subscriptionIDs: Array(1...5), run: "night", reason: .nightly)
            for id: Int64 in [6, 7] { try queue.enqueue(subscriptionID: id, run: "push", reason: .notification) }
            // A minute on, on the scripts' clock (the jobs' stream ids stay on Redis's: a moment later).
            try deployment.clock.advance(by: .seconds(60), on: connection)
            let reserved = try queue.reserve(count: 4, block: .zero)  // 6, 7, 1, 2
            _ = try queue.retry(reserved[0], after: timeoutFailure)  // due in up to an hour... or at once
            try queue.bury(reserved[1], failure: timeoutFailure)
            let now = try deployment.clock.now(on: connection)
            try queue.schedule(Job(subscriptionID: 8, runID: "r", reason: .renewal, enqueuedAt: now), at: now - 1)
            try queue.schedule(Job(subscriptionID: 9, runID: "r", reason: .renewal, enqueuedAt: now), at: now + 60_000)
            try queue.heartbeat()
            // A pause that cannot end before the stats are read, however slow the machine.
            let longPause = try PausePolicy(base: .seconds(600), cap: .seconds(600), probeLease: .seconds(60), streak: 5)
            let gate = try deployment.gate(limit: try RateLimit(perSecond: 10, burst: 5), pausePolicy: longPause, on: connection)
            _ = try gate.admit(upTo: 3)
            for _ in 0..<longPause.streak { try gate.reportUnavailable() }
            try gate.halt(reason: "operator stop")
            return (empty, try queue.stats())
        }
        #expect(empty.ready == 0 && empty.reserved == 0 && empty.dead == 0 && empty.oldestJobAge == nil)
        #expect(empty.pausedUntil == nil && empty.haltedReason == nil && empty.limiterGranted == 0)

        #expect(stats.ready == 3)  // 3, 4, 5
        #expect(stats.readyHigh == 0)
        #expect(stats.reserved == 2)  // 1 and 2
        // The retried job is due within the hour (a random delay, possibly 0 ms), so it is in one of the two.
        #expect(stats.delayedDue + stats.delayedLater == 3)
        #expect(stats.delayedDue >= 1 && stats.delayedLater >= 1)
        #expect(stats.dead == 1)
        // Jobs 3, 4 and 5 were enqueued a minute ago, counted to their second of enqueue.
        let age = try #require(stats.oldestJobAge)
        #expect(age >= .seconds(60) && age < .seconds(61))
        #expect(stats.consumers.map(\.name) == ["worker-1"])
        #expect(stats.consumers.first?.reserved == 2)
        #expect(stats.liveWorkers == 1)
        #expect(stats.pausedUntil != nil)
        #expect(stats.haltedReason == "operator stop")
        #expect(stats.limiterGranted == 3)
        #expect(stats.jobsDone == 0 && stats.jobsRetried == 1 && stats.jobsDied == 1, "the fleet-wide counters of settled jobs")
    }

    @Test("the oldest job's age counts from its first enqueue through retries, pauses and replays, and ends when it leaves")
    func oldestJobAgeSurvivesRetries() async throws {
        let ages = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("worker-1", retryPolicy: try RetryPolicy(base: .seconds(1), cap: .seconds(1), maxAttempts: 2), on: connection)
            func age() throws -> Duration? { try queue.stats().oldestJobAge }
            func runAgain() throws -> ReservedJob {
                try deployment.clock.advance(by: .seconds(1), on: connection)
                try queue.promoteDue()
                return try unwrap(try queue.reserve(block: .zero).first, "the job back from the delayed set")
            }
            var ages: [String: Duration?] = [:]
            ages["empty"] = try age()
            let now = try deployment.clock.now(on: connection)
            // A check after a renewal, due in a little over three hours (its enqueue time is when it is due).
            let renewalDue = now + 11_000_000
            try queue.schedule(Job(subscriptionID: 2, runID: "r", reason: .renewal, enqueuedAt: renewalDue), at: renewalDue)
            ages["only a job due later"] = try age()
            try queue.enqueue(subscriptionIDs: [1], run: "night", reason: .nightly)
            // An outage: the job is retried, then postponed by a pause again and again, for two hours.
            try deployment.clock.advance(by: .seconds(600), on: connection)
            _ = try queue.retry(try unwrap(try queue.reserve(block: .zero).first, "the job"), after: timeoutFailure)
            for _ in 0..<4 {
                try deployment.clock.advance(by: .seconds(1800), on: connection)
                _ = try queue.postpone(try runAgain(), for: .zero)
            }
            ages["after two hours of retries and pauses"] = try age()
            // The renewal check is due now too: the nightly job is still the oldest.
            try deployment.clock.advance(by: .seconds(3600), on: connection)
            ages["with the renewal check due"] = try age()
            let last = try runAgain()
            _ = try queue.retry(last, after: timeoutFailure)  // its second attempt: to the dead letters
            ages["once it is dead"] = try age()
            try queue.replay(matching: DeadLetterFilter())
            ages["replayed"] = try age()
            for job in try queue.reserve(count: 10, block: .zero) { _ = try queue.ack(job) }
            ages["all done"] = try age()
            return ages
        }
        #expect(ages["empty"] == .some(nil))
        #expect(ages["only a job due later"] == .some(nil), "a job scheduled for later is not waiting yet")
        let outage = try #require(ages["after two hours of retries and pauses"] ?? nil)
        #expect(outage >= .seconds(600 + 4 * 1801) && outage < .seconds(600 + 4 * 1801 + 1))
        let withRenewal = try #require(ages["with the renewal check due"] ?? nil)
        #expect(withRenewal >= outage + .seconds(3600))
        // The renewal check, due 405 s before, is the only job left.
        let dead = try #require(ages["once it is dead"] ?? nil)
        #expect(dead >= .seconds(405) && dead < .seconds(406))
        // A replay is a fresh job: it counts from now (to its second), the renewal check from when it was due.
        #expect((ages["replayed"] ?? nil).map { $0 <= dead } == true)
        #expect(ages["all done"] == .some(nil))
    }

    @Test("the oldest job's age is exact to the second, not counted from the start of its minute")
    func oldestJobAgeToTheSecond() async throws {
        let (stats, depths, expected) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("worker-1", on: connection)
            let now = try deployment.clock.now(on: connection)
            // First enqueued 59 s into a minute that began over two minutes ago: that minute began 59 s before it.
            let enqueuedAt = (now - 120_000) / 60_000 * 60_000 + 59_000
            try queue.schedule(Job(subscriptionID: 1, runID: "r", reason: .renewal, enqueuedAt: enqueuedAt), at: enqueuedAt)
            // And a fresh one, 10 s on: the older is still the oldest.
            try deployment.clock.advance(by: .seconds(10), on: connection)
            try queue.enqueue(subscriptionIDs: [2], run: "night", reason: .nightly)
            return (try queue.stats(), try queue.depths(), Duration.milliseconds(now + 10_000 - enqueuedAt))
        }
        let age = try #require(stats.oldestJobAge)
        #expect(age >= expected && age < expected + .seconds(1), "\(age) for a job first enqueued \(expected) ago")
        #expect(depths.oldestJobAge == age, "the Queues page reads the same age")
    }

    @Test("a run's tally counts its jobs verified and dead apart; a replayed job is the run's again; other jobs count in none")
    func runTally() async throws {
        let (before, tallies, other, done) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("worker-1", on: connection)
            let before = try queue.tally(ofRun: "night")
            try queue.enqueue(subscriptionIDs: Array(1...4), run: "night", reason: .nightly)
            try queue.enqueue(subscriptionID: 9, run: "night", reason: .notification)
            var tallies: [RunTally?] = []
            let jobs = try queue.reserve(count: 5, block: .zero)
            let night = jobs.filter { $0.job.reason == .nightly }
            _ = try queue.ack([night[0], night[1]] + jobs.filter { $0.job.reason == .notification })
            try queue.bury(night[2], failure: timeoutFailure)
            tallies.append(try queue.tally(ofRun: "night"))
            try queue.replay(matching: .all)
            tallies.append(try queue.tally(ofRun: "night"))
            _ = try queue.ack(try queue.reserve(count: 5, block: .zero) + [night[3]])
            tallies.append(try queue.tally(ofRun: "night"))
            try queue.enqueue(subscriptionID: 10, run: "push", reason: .notification)
            _ = try queue.ack(try queue.reserve(count: 1, block: .zero))
            return (before, tallies, try queue.tally(ofRun: "push"), try queue.stats().jobsDone)
        }
        #expect(before == nil)
        let figures = tallies.map { $0.map { [$0.enqueued, $0.verified, $0.dead] } }
        #expect(figures[0] == [4, 2, 1], "the notification job is no part of the run")
        #expect(tallies[0]?.lastSettledAt != nil, "a settled job notes when")
        #expect(tallies[0]?.toGo == 1)
        #expect(figures[1] == [4, 2, 0] && tallies[1]?.toGo == 2)
        #expect(tallies[1]?.replayed == 1, "the replayed letter leaves the dead, to go again")
        #expect(tallies[1]?.lastSettledAt == tallies[0]?.lastSettledAt, "a replay settles nothing")
        #expect(figures[2] == [4, 4, 0] && tallies[2]?.replayed == 1)
        #expect(tallies[2]?.toGo == 0)
        #expect(other == nil, "a job for one event keeps no tally")
        #expect(done == 6, "every ack counts fleet-wide, whatever its run: 3 + 2 + 1")
    }

    @Test("a consumer deregisters only once it holds no jobs; idle empty consumers can be removed")
    func consumersComeAndGo() async throws {
        let result = try await withDeployment { deployment, connection in
            let busy = try deployment.queue("busy", on: connection)
            let idle = try deployment.queue("idle")
            let leaver = try deployment.queue("leaver")
            try busy.enqueue(subscriptionIDs: [1], run: "r", reason: .nightly)
            let job = try unwrap(try busy.reserve(block: .zero).first, "a job")
            // Redis creates a consumer when it first delivers to it.
            try busy.enqueue(subscriptionIDs: [2, 3], run: "r", reason: .nightly)
            for queue in [idle, leaver] {
                try queue.ack(try unwrap(try queue.reserve(block: .zero).first, "a job"))
            }
            for queue in [busy, idle, leaver] { try queue.heartbeat() }
            let refused = try busy.deregister()
            try busy.ack(job)
            let accepted = try busy.deregister()
            let left = try leaver.deregister()
            // Real time: a consumer's idle time grows on Redis's clock, which only waiting moves.
            Thread.sleep(forTimeInterval: 0.15)
            let removed = try busy.removeIdleConsumers(idleLongerThan: .milliseconds(100))
            let stats = try busy.stats()
            return (refused, accepted, left, removed, stats.consumers.map(\.name), stats.liveWorkers)
        }
        let (refused, accepted, left, removed, consumers, live) = result
        #expect(refused == false)
        #expect(accepted == true)
        #expect(left == true)
        #expect(removed == 1)  // "idle"
        #expect(consumers.isEmpty)
        #expect(live == 1)  // "idle" still sent a heartbeat; the two that deregistered are gone
    }

    @Test("each process's given-up slots add up; status sees the recent ones, and an hour's silence forgets one")
    func starvedWorkersAreCountedSeenAndForgotten() async throws {
        let (counted, aMinuteOn, tenMinutesOn, anHourOn, remaining) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("worker-1", on: connection)
            try queue.reportSlotsGivenUp(3, by: "host-a")
            try queue.reportSlotsGivenUp(2, by: "host-a")
            try queue.reportSlotsGivenUp(40, by: "host-b")
            let counted = try queue.starvedWorkers()
            try deployment.clock.advance(by: .seconds(60), on: connection)
            let aMinuteOn = try queue.starvedWorkers()
            try deployment.clock.advance(by: .seconds(540), on: connection)
            let tenMinutesOn = try queue.starvedWorkers()
            try deployment.clock.advance(by: .seconds(3000), on: connection)
            try queue.reportSlotsGivenUp(1, by: "host-b")
            let anHourOn = try queue.starvedWorkers()
            let remaining = try connection.command("HGETALL", deployment.keys.slotsGivenUp).array?.count ?? -1
            return (counted, aMinuteOn, tenMinutesOn, anHourOn, remaining)
        }
        #expect(counted.map(\.process) == ["host-b", "host-a"], "the most starved first")
        #expect(counted.map(\.slotsGivenUp) == [40, 5])
        #expect(counted.map(\.lastGivenUpSecondsAgo) == [0, 0])
        #expect(aMinuteOn.map(\.lastGivenUpSecondsAgo) == [60, 60])
        #expect(tenMinutesOn.isEmpty, "nothing given up in the last 5 minutes")
        #expect(anHourOn.map(\.process) == ["host-b"])
        #expect(anHourOn.map(\.slotsGivenUp) == [41], "host-b's count goes on")
        #expect(remaining == 2, "host-a, silent for an hour, is forgotten: only host-b's field and count remain")
    }
}
