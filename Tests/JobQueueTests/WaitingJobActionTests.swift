import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("An operator's actions on jobs waiting for a time")
struct WaitingJobActionTests {
    /// Three jobs of a sweep, retried after a failure: one is retried now, one deleted, one buried.
    @Test("retry now makes a job due at once; delete and bury take it out of the queue and count it in its run")
    func retryDeleteAndBury() async throws {
        let result = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("operator", on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "night", reason: .nightly)
            for reserved in try queue.reserve(count: 3, block: .zero) {
                _ = try queue.retry(reserved, after: JobFailure(errorClass: "timeout", message: "no answer"))
            }
            let waiting = try queue.delayedJobs().compactMap(\.job).sorted { $0.subscriptionID < $1.subscriptionID }
            let notDueYet = try queue.promoteDue()
            let retried = try queue.act(.retryNow, onWaiting: [waiting[0]], by: "ops-alice")
            let promoted = try queue.promoteDue()
            let deleted = try queue.act(.delete, onWaiting: [waiting[1]], by: "ops-alice")
            let buried = try queue.act(.bury, onWaiting: [waiting[2]], by: "ops-alice")
            let again = try queue.act(.delete, onWaiting: Array(waiting[1...2]), by: "ops-alice")
            let bits = try [1, 2, 3].map { try connection.command("GETBIT", deployment.keys.queued, $0).int ?? -1 }
            return (notDueYet, retried, promoted, deleted, buried, again, bits, try queue.tally(ofRun: "night"),
                    try queue.deadLetters(), try queue.stats())
        }
        let (notDueYet, retried, promoted, deleted, buried, again, bits, tally, letters, stats) = result
        #expect(notDueYet == 0, "each waits for its backoff")
        #expect(retried == 1 && promoted == 1, "retried now: due at once, the promoter moved it")
        #expect(deleted == 1 && buried == 1 && again == 0, "each only while it still waits")
        #expect(bits == [1, 0, 0], "the retried job still holds its subscription's bit; the others let the next sweep queue theirs")
        #expect(tally?.enqueued == 2 && tally?.dead == 1 && tally?.toGo == 1, "\(String(describing: tally))")
        let letter = try #require(letters.first)
        #expect(letters.count == 1 && letter.job?.subscriptionID == 3 && letter.failure.errorClass == "operator")
        #expect(letter.failure.message == "sent to the dead letters by ops-alice" && letter.attempts == 1)
        #expect(stats.delayedDue + stats.delayedLater == 0 && stats.ready == 1 && stats.dead == 1)
        #expect(stats.oldestJobAge != nil, "the retried job is still counted in the queue")
    }

    /// 2,500 retries of one run, two of another whose id the first's glob would match unescaped, and
    /// three checks not tried yet: each filter counts and acts on its own, over several scan calls.
    @Test("all the waiting jobs a filter matches are counted and acted on, a thousand per call")
    func allOfAFilter() async throws {
        let result = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("operator", on: connection)
            try queue.enqueue(subscriptionIDs: Array(1...2_500), run: "night*", reason: .nightly)
            try queue.enqueue(subscriptionIDs: [3_001, 3_002], run: "nightly", reason: .nightly)
            var reserved: [ReservedJob]
            repeat {
                reserved = try queue.reserve(count: 1_000, block: .zero)
                for job in reserved { _ = try queue.retry(job, after: JobFailure(errorClass: "timeout", message: "no answer")) }
            } while !reserved.isEmpty
            // A second back, so that every retry is due later than now, even one whose jittered backoff was 0 ms.
            try deployment.clock.advance(by: .seconds(-1), on: connection)
            let now = try deployment.clock.now(on: connection)
            for id in Int64(4_001)...4_003 {
                try queue.schedule(Job(subscriptionID: id, runID: "push", reason: .notification, enqueuedAt: now), at: now + 3_600_000)
            }
            let ofRun = WaitingJobFilter(runID: "night*")
            let counts = try [WaitingJobFilter.all, ofRun, WaitingJobFilter(runID: "nightly"), WaitingJobFilter(retried: false),
                              WaitingJobFilter(reason: .notification, retried: true), WaitingJobFilter(subscriptionIDs: [17])]
                .map { try queue.countWaiting(matching: $0) }
            let retried = try queue.act(.retryNow, onWaitingMatching: ofRun, by: "ops-alice")
            let retriedAgain = try queue.act(.retryNow, onWaitingMatching: ofRun, by: "ops-alice")
            let deleted = try queue.act(.delete, onWaitingMatching: ofRun, by: "ops-alice")
            let buried = try queue.act(.bury, onWaitingMatching: WaitingJobFilter(retried: true), by: "ops-alice")
            let bits = try [1, 1_250, 2_500, 3_001, 3_002].map { try connection.command("GETBIT", deployment.keys.queued, $0).int ?? -1 }
            let (listed, complete) = try queue.delayedJobs(matching: WaitingJobFilter(reason: .notification), offset: 1, limit: 5)
            return (counts, retried, retriedAgain, deleted, buried, bits, try queue.tally(ofRun: "night*"), try queue.stats(),
                    listed.compactMap(\.job?.subscriptionID), complete, try queue.deadLetters().map(\.failure.errorClass))
        }
        let (counts, retried, retriedAgain, deleted, buried, bits, tally, stats, listed, complete, deadKinds) = result
        #expect(counts == [2_505, 2_500, 2, 3, 0, 1], "all, the run taken literally, the other run, not tried, none, one subscription")
        #expect(retried == 2_500 && retriedAgain == 0, "retried once each: a job already due is not counted again")
        #expect(deleted == 2_500 && buried == 2, "\(deleted) deleted, \(buried) buried")
        #expect(bits == [0, 0, 0, 0, 0], "the next sweep may queue each again")
        #expect(tally?.enqueued == 0 && tally?.toGo == 0, "\(String(describing: tally))")
        #expect(stats.delayedDue + stats.delayedLater == 3 && stats.dead == 2, "\(stats)")
        #expect(listed == [4_002, 4_003] && complete, "the notifications from the second on, soonest due first: \(listed)")
        #expect(deadKinds == ["operator", "operator"])
    }

    /// The queues' depths and ages at one instant, and the first jobs of each, bounded.
    @Test("each queue's depth and oldest job, and a bounded sample of its jobs")
    func depths() async throws {
        let result = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("worker-1", on: connection)
            let empty = try queue.depths()
            try queue.enqueue(subscriptionIDs: [6, 7], run: "ops", reason: .manual)
            try queue.enqueue(subscriptionIDs: [1, 2, 3, 4, 5], run: "night", reason: .nightly)
            let first = try queue.reserve(count: 1, block: .zero)[0]
            _ = try queue.reserve(count: 1, block: .zero)
            try queue.bury(first, failure: JobFailure(errorClass: "timeout", message: "no answer"))
            let now = try deployment.clock.now(on: connection)
            try queue.schedule(Job(subscriptionID: 8, runID: "push", reason: .notification, enqueuedAt: now), at: now + 60_000)
            try queue.schedule(Job(subscriptionID: 9, runID: "push", reason: .notification, enqueuedAt: now - 5_000), at: now - 5_000)
            return (empty, try queue.depths(), try queue.depths(sampleLimit: 2), first.job.subscriptionID)
        }
        let (empty, depths, small, buried) = result
        #expect(empty.ready.map(\.ready) == [0, 0] && empty.waiting == 0 && empty.dead == 0 && empty.sample.entries.isEmpty && empty.sample.complete)
        #expect(empty.ready.allSatisfy { $0.latency == nil } && empty.oldestJobAge == nil && empty.oldestDeadAge == nil)
        #expect(buried == 6, "reserve reads the high-priority stream first")
        let (high, normal) = (depths.ready[0], depths.ready[1])
        #expect(high.priority == .high && high.ready == 0 && high.inFlight == 1 && high.latency == nil, "\(high)")
        #expect(normal.priority == .normal && normal.ready == 5 && normal.inFlight == 0 && normal.latency != nil, "\(normal)")
        #expect(depths.waitingDue == 1 && depths.waitingLater == 1)
        #expect(depths.waitingOverdue == .seconds(5) && depths.nextDueIn == .seconds(60))
        #expect(depths.dead == 1 && depths.oldestDeadAge == .zero && depths.oldestJobAge != nil)
        let placed = Dictionary(grouping: depths.sample.entries, by: \.place).mapValues { $0.map(\.job.subscriptionID) }
        #expect(placed == [.ready: [1, 2, 3, 4, 5], .inFlight: [7], .waiting: [9, 8]] && depths.sample.complete, "\(placed)")
        let few = Dictionary(grouping: small.sample.entries, by: \.place).mapValues { $0.map(\.job.subscriptionID) }
        #expect(few == [.ready: [1, 2], .inFlight: [7], .waiting: [9, 8]] && !small.sample.complete, "\(few)")
    }

    /// A night's name takes every pass of it, as the dead letters' filter does; a pass's, that pass alone.
    @Test("a filter's run is a night, with all its passes, or one pass")
    func aNightTakesItsPasses() async throws {
        let counts = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("operator", on: connection)
            let now = try deployment.clock.now(on: connection)
            for (id, run) in [(1, "2026-11-28/1"), (2, "2026-11-28/2"), (3, "2026-11-28"), (4, "2026-11-280"), (5, "2026-11-29/1")] {
                try queue.schedule(Job(subscriptionID: Int64(id), runID: run, reason: .notification, enqueuedAt: now), at: now + 60_000)
            }
            return try ["2026-11-28", "2026-11-28/2", "2026-11-2", "2026-11-29"].map { try queue.countWaiting(matching: WaitingJobFilter(runID: $0)) }
        }
        #expect(counts == [3, 1, 0, 1], "\(counts)")
    }
}
