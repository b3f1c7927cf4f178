import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

/// A subscription whose job is in the queue (ready, reserved, delayed) is enqueued by no pass of
/// any run; once the job has left the queue for good (acked or buried), a pass may enqueue it again.
@Suite("Each subscription is queued once, whichever run enqueues it")
struct QueuedOnceTests {
    static let rejected = JobFailure(errorClass: "apple.21010", message: "the receipt could not be authorized")

    @Test("a second pass while the jobs wait adds none; once acked, a pass enqueues them again")
    func passesDoNotPileUp() async throws {
        let (second, lengths, third) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("scheduler", on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "pass-1", reason: .nightly)
            let afterFirst = try connection.length(ofStream: deployment.keys.ready)
            let second = try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "pass-2", reason: .nightly)
            let afterSecond = try connection.length(ofStream: deployment.keys.ready)
            for reserved in try queue.reserve(count: 3, block: .zero) where reserved.job.subscriptionID != 3 {
                try queue.ack(reserved)
            }
            let third = try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "pass-3", reason: .nightly)
            return (second, [afterFirst, afterSecond], third)
        }
        #expect(second.added == 0 && second.alreadyQueued == 3)
        #expect(lengths == [3, 3])
        #expect(third.added == 2 && third.alreadyQueued == 1, "job 3 is still reserved")
    }

    @Test("a job waiting in the delayed set to be retried or postponed is not enqueued again, nor once promoted")
    func delayedJobsStayQueued() async throws {
        let (whileDelayed, lengths, whilePromoted, afterAck) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", retryPolicy: try instantRetries(maxAttempts: 5), on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2], run: "pass-1", reason: .nightly)
            let reserved = try queue.reserve(count: 2, block: .zero)
            _ = try queue.retry(reserved[0], after: timeoutFailure)
            try queue.postpone(reserved[1], for: .milliseconds(1))
            let whileDelayed = try queue.enqueue(subscriptionIDs: [1, 2], run: "pass-2", reason: .nightly)
            let lengths = (try connection.length(ofStream: deployment.keys.ready),
                           try connection.command("ZCARD", deployment.keys.delayed).int)
            try deployment.clock.advance(by: .milliseconds(1), on: connection)
            _ = try queue.promoteDue()
            let whilePromoted = try queue.enqueue(subscriptionIDs: [1, 2], run: "pass-3", reason: .nightly)
            for job in try queue.reserve(count: 2, block: .zero) { try queue.ack(job) }
            let afterAck = try queue.enqueue(subscriptionIDs: [1, 2], run: "pass-4", reason: .nightly)
            return (whileDelayed, lengths, whilePromoted, afterAck)
        }
        #expect(whileDelayed.added == 0 && whileDelayed.alreadyQueued == 2)
        #expect(lengths.0 == 0 && lengths.1 == 2)
        #expect(whilePromoted.added == 0)
        #expect(afterAck.added == 2)
    }

    @Test("a buried job, whether rejected, out of attempts or stalled, can be enqueued again, even by the same run")
    func buriedJobsCanBeEnqueuedAgain() async throws {
        let (reclaimed, dead, restarted) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", retryPolicy: try instantRetries(maxAttempts: 1), on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "night", reason: .nightly)
            let reserved = try queue.reserve(count: 3, block: .zero)
            try queue.bury(reserved[0], failure: Self.rejected)
            _ = try queue.retry(reserved[1], after: timeoutFailure)  // its one attempt is spent: buried
            // Job 3's worker died; its next delivery (at once: the lease is not the point here) makes it stalled.
            let reclaimed = try deployment.queue("b").reclaim(idleLongerThan: .zero, maxDeliveries: 1)
            let dead = try queue.deadLetters().map(\.failure.errorClass)
            return (reclaimed.buried, dead, try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "night", reason: .nightly))
        }
        #expect(reclaimed == 1)
        #expect(dead == ["apple.21010", "timeout", JobFailure.stalled])
        #expect(restarted.added == 3 && restarted.alreadyQueued == 0)
    }

    @Test("a notification's job neither blocks nor clears the queued bit of a nightly job of its subscription")
    func eventJobsLeaveTheBitAlone() async throws {
        let (events, second) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try queue.enqueue(subscriptionIDs: [7], run: "pass-1", reason: .nightly)
            try queue.enqueue(subscriptionID: 7, run: "notification-1", reason: .notification)
            try queue.enqueue(subscriptionID: 8, run: "notification-2", reason: .notification)
            let events = try queue.reserve(count: 2, block: .zero)  // the high-priority stream comes first
            for job in events { try queue.ack(job) }
            let second = try queue.enqueue(subscriptionIDs: [7, 8], run: "pass-2", reason: .nightly)
            return (events.map(\.job.reason), second)
        }
        #expect(events == [.notification, .notification])
        #expect(second.added == 1 && second.alreadyQueued == 1, "7's nightly job still waits; 8 had none")
    }

    @Test("each path takes only its own reasons, so no job clears a bit it does not hold")
    func pathsRefuseTheOthersReasons() async throws {
        let errors = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let now = try connection.redisNow()
            var errors: [QueueError] = []
            let attempts: [() throws -> Void] = [
                { _ = try queue.enqueue(subscriptionIDs: [1], run: "push", reason: .notification) },
                { _ = try queue.enqueue(subscriptionID: 1, run: "night", reason: .nightly) },
                { _ = try queue.schedule(Job(subscriptionID: 1, runID: "night", reason: .replay, enqueuedAt: now), at: now) },
            ]
            for attempt in attempts {
                do { try attempt() } catch let error as QueueError { errors.append(error) }
            }
            return errors
        }
        #expect(errors.count == 3)
        #expect(errors.allSatisfy { if case .invalidArgument = $0 { true } else { false } })
    }

    @Test("replay adds a job only for a subscription not queued again meanwhile; either way its letter goes")
    func replayIsDeduplicated() async throws {
        let (requeued, replayed, jobs, afterReplay, deadLength) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2], run: "pass-1", reason: .nightly)
            for reserved in try queue.reserve(count: 2, block: .zero) { try queue.bury(reserved, failure: timeoutFailure) }
            let requeued = try queue.enqueue(subscriptionIDs: [2], run: "pass-2", reason: .nightly)
            let replayed = try queue.replay(matching: .all)
            let jobs = try queue.reserve(count: 10, block: .zero).map { "\($0.job.subscriptionID)\($0.job.reason.rawValue)" }
            let afterReplay = try queue.enqueue(subscriptionIDs: [1, 2], run: "pass-3", reason: .nightly)
            return (requeued, replayed, jobs, afterReplay, try connection.length(ofStream: deployment.keys.dead))
        }
        #expect(requeued.added == 1)
        #expect(replayed == 2)
        #expect(jobs == ["2n", "1p"])
        #expect(afterReplay.added == 0)
        #expect(deadLength == 0)
    }
}
