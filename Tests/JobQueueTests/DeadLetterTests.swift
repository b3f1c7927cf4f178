import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Dead letters: list, replay, purge")
struct DeadLetterTests {
    static let rejected = JobFailure(errorClass: "apple.21010", message: "the receipt could not be authorized")

    /// Buries six jobs: subscriptions 1–3 of run "a" and 4–6 of run "b"; odd ones timed out,
    /// even ones were rejected.
    static func buryMixedJobs(_ queue: JobQueue) throws {
        try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "a", reason: .nightly)
        try queue.enqueue(subscriptionIDs: [4, 5, 6], run: "b", reason: .nightly)
        for reserved in try queue.reserve(count: 6, block: .zero) {
            try queue.bury(reserved, failure: reserved.job.subscriptionID % 2 == 1 ? timeoutFailure : rejected)
        }
    }

    @Test("dead letters are listed oldest first, filtered by error class, run or subscription")
    func listing() async throws {
        let (all, timeouts, runB, chosen, firstTwo) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try Self.buryMixedJobs(queue)
            let ids = { (letters: [DeadLetter]) in letters.compactMap { $0.job?.subscriptionID } }
            return (
                ids(try queue.deadLetters()),
                ids(try queue.deadLetters(matching: DeadLetterFilter(errorClass: "timeout"))),
                ids(try queue.deadLetters(matching: DeadLetterFilter(runID: "b"))),
                ids(try queue.deadLetters(matching: DeadLetterFilter(runID: "a", subscriptionIDs: [2, 5]))),
                ids(try queue.deadLetters(limit: 2))
            )
        }
        #expect(all == [1, 2, 3, 4, 5, 6])
        #expect(timeouts == [1, 3, 5])
        #expect(runB == [4, 5, 6])
        #expect(chosen == [2])
        #expect(firstTwo == [1, 2])
    }

    @Test("a night's run id finds the dead letters of all its passes; a pass's, its own")
    func byNightOrPass() async throws {
        let (night, pass) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            for (id, run) in [(1, "2026-11-28/1"), (2, "2026-11-28/2"), (3, "2026-11-28/20"), (4, "2026-11-280/1")] {
                try queue.enqueue(subscriptionIDs: [Int64(id)], run: run, reason: .nightly)
            }
            for reserved in try queue.reserve(count: 4, block: .zero) { try queue.bury(reserved, failure: Self.rejected) }
            let ids = { (runID: String) in try queue.deadLetters(matching: DeadLetterFilter(runID: runID)).compactMap { $0.job?.subscriptionID } }
            return (try ids("2026-11-28"), try ids("2026-11-28/2"))
        }
        #expect(night == [1, 2, 3])
        #expect(pass == [2])
    }

    @Test("replay re-enqueues matching letters as fresh jobs, once; purge deletes matching letters")
    func replayAndPurge() async throws {
        let result = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try Self.buryMixedJobs(queue)
            let replayed = try queue.replay(matching: DeadLetterFilter(errorClass: "timeout", runID: "a"))
            let replayedAgain = try queue.replay(matching: DeadLetterFilter(errorClass: "timeout", runID: "a"))
            let jobs = try queue.reserve(count: 10, block: .zero).map(\.job)
            let purged = try queue.purge(matching: DeadLetterFilter(errorClass: "apple.21010"))
            let left = try queue.deadLetters().compactMap { $0.job?.subscriptionID }
            let replayedBySubscription = try queue.replay(matching: DeadLetterFilter(subscriptionIDs: [5]))
            let purgedRest = try queue.purge(matching: .all)
            return (replayed, replayedAgain, jobs, purged, left, replayedBySubscription, purgedRest,
                    try connection.length(ofStream: deployment.keys.dead))
        }
        let (replayed, replayedAgain, jobs, purged, left, replayedBySubscription, purgedRest, deadLength) = result
        #expect(replayed == 2)
        #expect(replayedAgain == 0)
        #expect(jobs.map(\.subscriptionID) == [1, 3])
        #expect(jobs.allSatisfy { $0.reason == .replay && $0.attempt == 0 && $0.firstFailedAt == nil && $0.runID == "a" })
        #expect(purged == 3)
        #expect(left == [5])
        #expect(replayedBySubscription == 1)
        #expect(purgedRest == 0)
        #expect(deadLength == 0)
    }

    @Test("letters that are not jobs are listed and purged, but never replayed")
    func undecodableLetters() async throws {
        let (replayed, listed, purged) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try connection.command("XADD", deployment.keys.ready, "*", "j", "not a job")
            _ = try queue.reserve(block: .zero)
            let replayed = try queue.replay(matching: .all)
            let listed = try queue.deadLetters(matching: DeadLetterFilter(errorClass: JobFailure.undecodable))
            return (replayed, listed.map(\.jobText), try queue.purge(matching: DeadLetterFilter(errorClass: JobFailure.undecodable)))
        }
        #expect(replayed == 0)
        #expect(listed == ["not a job"])
        #expect(purged == 1)
    }
}
