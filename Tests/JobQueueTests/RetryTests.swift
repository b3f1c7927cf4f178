import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Retries, postponing and backoff")
struct RetryTests {
    @Test("a failed job returns via the delayed set with attempt+1, then dies after maxAttempts with its history")
    func retryThenDeadLetter() async throws {
        let result = try await withDeployment(clock: .driven) { deployment, connection in
            // Backoffs of up to a minute, on a clock the test moves on a minute after each failure.
            let minute = try RetryPolicy(base: .seconds(60), cap: .seconds(60), maxAttempts: 3)
            let queue = try deployment.queue("a", retryPolicy: minute, on: connection)
            let start = try deployment.clock.now(on: connection)
            try queue.enqueue(subscriptionIDs: [9], run: "night", reason: .nightly)
            var outcomes: [RetryOutcome] = []
            var delayedJobs: [Job] = []
            var dueAfter: [Int64] = []  // ms from each failure until its retry is due
            var attemptsSeen: [Int] = []
            while true {
                let reserved = try unwrap(try queue.reserve(block: .zero).first, "a reserved job")
                attemptsSeen.append(reserved.job.attempt)
                let outcome = try queue.retry(reserved, after: timeoutFailure)
                outcomes.append(outcome)
                guard case .delayed = outcome else { break }
                let delayed = try connection.sortedSet(deployment.keys.delayed)
                delayedJobs += try delayed.map { try Job(encoded: $0.member) }
                let now = try deployment.clock.now(on: connection)
                dueAfter += delayed.map { $0.score - now }
                try deployment.clock.advance(by: .seconds(60), on: connection)
                _ = try queue.promoteDue()
            }
            let leftInRedis = (
                try connection.length(ofStream: deployment.keys.ready),
                try connection.command("ZCARD", deployment.keys.delayed).int
            )
            return (start, outcomes, delayedJobs, dueAfter, attemptsSeen, try queue.deadLetters(), leftInRedis)
        }
        let (start, outcomes, delayedJobs, dueAfter, attemptsSeen, dead, leftInRedis) = result
        #expect(attemptsSeen == [0, 1, 2])
        #expect(outcomes.count == 3)
        #expect(outcomes.prefix(2).map { if case .delayed(let d) = $0 { d.wholeMilliseconds } else { -1 } } == dueAfter)
        #expect(dueAfter.allSatisfy { (0...60_000).contains($0) })
        #expect(outcomes.last == .buried)
        #expect(delayedJobs.map(\.attempt) == [1, 2])
        #expect(delayedJobs.allSatisfy { $0.firstFailedAt == start })

        let letter = try #require(dead.first)
        #expect(dead.count == 1)
        #expect(letter.job?.attempt == 2)
        #expect(letter.failure == timeoutFailure)
        #expect(letter.attempts == 3)
        #expect(letter.firstFailure == start)
        #expect(letter.lastFailure == start + 120_000)  // the clock moved on two minutes
        #expect(letter.buriedAt == letter.lastFailure)
        #expect(leftInRedis.0 == 0 && leftInRedis.1 == 0)
    }

    @Test("postponing a job keeps its attempt count and leaves a job that never failed without a failure time")
    func postponeChargesNoAttempt() async throws {
        let (fresh, failed, redelivered) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", retryPolicy: try instantRetries(maxAttempts: 5), on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2], run: "night", reason: .nightly)
            let reserved = try queue.reserve(count: 2, block: .zero)
            try queue.postpone(reserved[0], for: .milliseconds(1))
            _ = try queue.retry(reserved[1], after: timeoutFailure)
            try deployment.clock.advance(by: .milliseconds(1), on: connection)
            _ = try queue.promoteDue()
            let again = try queue.reserve(count: 2, block: .zero)
            let failedOnce = try unwrap(again.first { $0.job.subscriptionID == 2 }, "job 2")
            try queue.postpone(failedOnce, for: .seconds(60))
            let postponed = try connection.sortedSet(deployment.keys.delayed).map { try Job(encoded: $0.member) }
            return (again.first { $0.job.subscriptionID == 1 }?.job, postponed.first, again.count)
        }
        #expect(redelivered == 2)
        #expect(fresh?.attempt == 0)
        #expect(fresh?.firstFailedAt == nil)
        #expect(failed?.attempt == 1)
        #expect(failed?.firstFailedAt != nil)
    }

    @Test("backoff: 10,000 delays lie within [0, min(cap, base·2^attempt)], averaging half of it")
    func backoffBounds() throws {
        let policy = try RetryPolicy(base: .milliseconds(100), cap: .seconds(10), maxAttempts: 20)
        for (attempt, ceiling) in [(0, 100), (1, 200), (3, 800), (6, 6_400), (7, 10_000), (62, 10_000), (500, 10_000)] {
            #expect(policy.ceiling(attempt: attempt) == .milliseconds(ceiling))
            let samples = (0..<10_000).map { _ in policy.backoff(attempt: attempt) }
            #expect(samples.allSatisfy { $0 >= .zero && $0 <= .milliseconds(ceiling) })
            let mean = Double(samples.map(\.milliseconds).reduce(0, +)) / Double(samples.count)
            // The standard error of the mean is ceiling/√12/100 ≈ 0.3% of the ceiling.
            #expect(abs(mean / Double(ceiling) - 0.5) < 0.02, "attempt \(attempt): mean \(mean) ms")
        }
    }

    @Test("unusable retry policies are refused")
    func invalidPolicies() throws {
        #expect(throws: QueueError.self) { try RetryPolicy(base: .zero, cap: .seconds(1), maxAttempts: 3) }
        #expect(throws: QueueError.self) { try RetryPolicy(base: .seconds(2), cap: .seconds(1), maxAttempts: 3) }
        #expect(throws: QueueError.self) { try RetryPolicy(base: .seconds(1), cap: .seconds(1), maxAttempts: 0) }
    }
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
