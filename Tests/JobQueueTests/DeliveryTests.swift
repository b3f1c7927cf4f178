import Foundation
import JobQueue
import RedisClient
import Synchronization
import TestSupport
import Testing

@Suite("Reliable delivery: reserve, ack, reclaim")
struct DeliveryTests {
    @Test("an empty Redis works: the streams and the group are created, even again after a flush")
    func emptyRedis() async throws {
        let (groups, firstReserve, afterEnqueue, afterFlush) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let groups = try [deployment.keys.readyHigh, deployment.keys.ready].map { stream in
                (try connection.command("XINFO", "GROUPS", stream).array ?? []).count
            }
            let firstReserve = try queue.reserve(block: .zero)
            try queue.enqueue(subscriptionIDs: [7], run: "r", reason: .nightly)
            let afterEnqueue = try queue.reserve(block: .zero).map(\.job.subscriptionID)
            // As if someone flushed Redis under running workers: the next reserve recreates the group.
            try connection.command(["DEL"] + [deployment.keys.readyHigh, deployment.keys.ready])
            try queue.enqueue(subscriptionIDs: [8], run: "r2", reason: .nightly)
            let afterFlush = try queue.reserve(block: .zero).map(\.job.subscriptionID)
            return (groups, firstReserve.count, afterEnqueue, afterFlush)
        }
        #expect(groups == [1, 1])
        #expect(firstReserve == 0)
        #expect(afterEnqueue == [7])
        #expect(afterFlush == [8])
    }

    @Test("a job reserved by a consumer that dies is reclaimed by another after the visibility timeout")
    func crashRecovery() async throws {
        let result = try await withDeployment { deployment, connection in
            let crashed = try deployment.queue("crashed", on: connection)
            let rescuer = try deployment.queue("rescuer")
            try crashed.enqueue(subscriptionIDs: [42], run: "night", reason: .nightly)
            let lost = try unwrap(try crashed.reserve(block: .zero).first, "a reserved job")
            // Not idle long enough yet: nothing to reclaim. (A timeout far above a loaded machine's
            // pauses, so the check is the rule's, not the scheduler's.)
            let early = try rescuer.reclaim(idleLongerThan: .seconds(30), maxDeliveries: 5)
            // Any idle time is long enough for a timeout of zero: the same rule, without waiting.
            let late = try rescuer.reclaim(idleLongerThan: .zero, maxDeliveries: 5)
            let acked = try late.jobs.first.map { try rescuer.ack($0) }
            return (lost, early.jobs.count, late.jobs, acked, try connection.length(ofStream: deployment.keys.ready))
        }
        let (lost, early, reclaimed, acked, left) = result
        #expect(early == 0)
        #expect(reclaimed.count == 1)
        #expect(reclaimed.first?.job == lost.job)
        #expect(reclaimed.first?.entryID == lost.entryID)
        #expect(reclaimed.first?.deliveryCount == 2)
        #expect(acked == true)
        #expect(left == 0)
    }

    @Test("an ack counts once, and the old owner of a reclaimed job can no longer settle it")
    func noDoubleAck() async throws {
        let result = try await withDeployment { deployment, connection in
            let owner = try deployment.queue("owner", on: connection)
            let other = try deployment.queue("other")
            try owner.enqueue(subscriptionIDs: [1, 2], run: "night", reason: .nightly)
            let first = try unwrap(try owner.reserve(block: .zero).first, "a reserved job")
            let acks = [try owner.ack(first), try owner.ack(first), try other.ack(first)]

            let second = try unwrap(try owner.reserve(block: .zero).first, "a reserved job")
            let othersAckBeforeReclaim = try other.ack(second)
            let reclaimed = try other.reclaim(idleLongerThan: .zero, maxDeliveries: 5).jobs
            let oldOwner = (try owner.ack(second), try owner.retry(second, after: timeoutFailure), try owner.postpone(second, for: .zero))
            let newOwner = try reclaimed.map { try other.ack($0) }
            let delayed = try connection.command("ZCARD", deployment.keys.delayed).int
            return (acks, othersAckBeforeReclaim, oldOwner, newOwner, delayed)
        }
        let (acks, othersAckBeforeReclaim, oldOwner, newOwner, delayed) = result
        #expect(acks == [true, false, false])
        #expect(othersAckBeforeReclaim == false)
        #expect(oldOwner.0 == false)
        #expect(oldOwner.1 == .notReserved)
        #expect(oldOwner.2 == false)
        #expect(newOwner == [true])
        #expect(delayed == 0)
    }

    @Test("a batch's acks in one call settle exactly the jobs still reserved by the caller, in both streams")
    func batchAck() async throws {
        let result = try await withDeployment { deployment, connection in
            let owner = try deployment.queue("owner", on: connection)
            let other = try deployment.queue("other")
            // Job 2 is reserved first and taken over by another worker; the rest are reserved after.
            try owner.enqueue(subscriptionIDs: [2], run: "night", reason: .nightly)
            let stale = try owner.reserve(count: 1, block: .zero)
            let taken = try other.reclaim(idleLongerThan: .zero, maxDeliveries: 5).jobs
            try owner.enqueue(subscriptionIDs: [1, 3], run: "night", reason: .nightly)
            try owner.enqueue(subscriptionID: 4, run: "push", reason: .notification)  // the high-priority stream
            let batch = stale + (try owner.reserve(count: 3, block: .zero))
            let acked = try owner.ack(batch).map { $0 != nil }
            let left = try [deployment.keys.readyHigh, deployment.keys.ready].map { try connection.length(ofStream: $0) }
            let queuedBits = try [1, 2, 3].map { try connection.command("GETBIT", deployment.keys.queued, $0).int }
            return (batch.map(\.job.subscriptionID), acked, taken.map(\.job.subscriptionID), left, queuedBits, try owner.ack([]))
        }
        let (order, acked, taken, left, queuedBits, none) = result
        #expect(order == [2, 4, 1, 3])
        #expect(taken == [2])
        #expect(acked == [false, true, true, true])
        #expect(left == [0, 1], "job 2 stays, reserved by the other worker")
        #expect(queuedBits == [0, 1, 0], "job 2 still holds its subscription's queued bit")
        #expect(none == [])
    }

    @Test("an ack says how long each job took from its first enqueue, by the scripts' clock, a retry's wait included")
    func ackTellsEachJobsTime() async throws {
        let ages = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", retryPolicy: try instantRetries(maxAttempts: 5), on: connection)
            try queue.enqueue(subscriptionIDs: [1], run: "night", reason: .nightly)
            try deployment.clock.advance(by: .seconds(30), on: connection)
            try queue.enqueue(subscriptionIDs: [2], run: "night", reason: .nightly)
            let first = try queue.reserve(count: 2, block: .zero)
            _ = try queue.retry(try unwrap(first.first { $0.job.subscriptionID == 1 }, "job 1"), after: timeoutFailure)
            try deployment.clock.advance(by: .seconds(90), on: connection)
            _ = try queue.promoteDue()
            let retried = try queue.reserve(count: 1, block: .zero)
            let jobTwo = try unwrap(first.first { $0.job.subscriptionID == 2 }, "job 2")
            let ages = try queue.ack(retried + [jobTwo])
            return ages + (try queue.ack([jobTwo]))
        }
        #expect(ages == [.seconds(120), .seconds(90), nil], "job 1 from its first enqueue through its retry; job 2 acked once")
    }

    @Test("reclaim drops reservations whose stream entry was deleted behind the queue's back")
    func reclaimDeletedEntries() async throws {
        let (reclaimed, pending) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2], run: "night", reason: .nightly)
            let reserved = try queue.reserve(count: 2, block: .zero)
            try connection.command("XDEL", deployment.keys.ready, reserved[0].entryID)
            let reclaimed = try deployment.queue("b").reclaim(idleLongerThan: .zero, maxDeliveries: 5)
            let pending = try connection.command("XPENDING", deployment.keys.ready, QueueKeys.group).array?.first?.int
            return (reclaimed, pending)
        }
        #expect(reclaimed.deleted == 1)
        #expect(reclaimed.jobs.map(\.job.subscriptionID) == [2])
        #expect(pending == 1)  // job 2, now reserved by "b"
    }

    @Test("a job delivered more than K times without an ack goes to the dead letters, with the reason")
    func poisonJob() async throws {
        let result = try await withDeployment { deployment, connection in
            let queues = try ["w1", "w2", "w3"].map { try deployment.queue($0) }
            try queues[0].enqueue(subscriptionIDs: [666], run: "night", reason: .nightly)
            _ = try queues[0].reserve(block: .zero)  // delivery 1; the worker crashes on it
            let second = try queues[1].reclaim(idleLongerThan: .zero, maxDeliveries: 2)  // delivery 2
            let third = try queues[2].reclaim(idleLongerThan: .zero, maxDeliveries: 2)  // would be 3
            let dead = try queues[2].deadLetters()
            return (second, third, dead, try connection.length(ofStream: deployment.keys.ready))
        }
        let (second, third, dead, ready) = result
        #expect(second.jobs.map(\.deliveryCount) == [2])
        #expect(second.buried == 0)
        #expect(third.jobs.isEmpty)
        #expect(third.buried == 1)
        #expect(ready == 0)
        let letter = try #require(dead.first)
        #expect(dead.count == 1)
        #expect(letter.job?.subscriptionID == 666)
        #expect(letter.failure.errorClass == JobFailure.stalled)
        #expect(letter.failure.message == "delivered 2 times without an ack: the worker probably crashed on it")
    }

    @Test("entries that are not jobs go to the dead letters and do not stop reserve")
    func garbageEntries() async throws {
        let (reserved, dead, ready) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let stream = deployment.keys.ready
            for garbage in ["garbage", "1|run|n|0|not-a-time|", "-5|run|n|0|1|", "1|run|?|0|1|", ""] {
                try connection.command("XADD", stream, "*", "j", garbage)
            }
            try connection.command("XADD", stream, "*", "other", "field")
            try connection.command("XADD", stream, "*", "j", [UInt8]([0xff, 0xfe, 0x7c]))
            try queue.enqueue(subscriptionIDs: [5], run: "night", reason: .nightly)
            let reserved = try queue.reserve(count: 20, block: .zero)
            return (reserved, try queue.deadLetters(), try connection.length(ofStream: stream))
        }
        #expect(reserved.map(\.job.subscriptionID) == [5])
        #expect(dead.count == 7)
        #expect(dead.allSatisfy { $0.failure.errorClass == JobFailure.undecodable && $0.job == nil })
        #expect(dead.first?.jobText == "garbage")
        #expect(dead.contains { $0.failure.message.contains("no 'j' field") })
        #expect(ready == 1)  // only the good job, still reserved
    }

    @Test("high-priority jobs are reserved first, and count is honoured across both streams")
    func priorityFirst() async throws {
        let (singles, mixed) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "night", reason: .nightly)
            for id: Int64 in [10, 11] { try queue.enqueue(subscriptionID: id, run: "push", reason: .notification) }
            let singles = try (0..<3).map { _ in try queue.reserve(count: 1, block: .zero).map(\.job.subscriptionID) }
            try queue.enqueue(subscriptionID: 12, run: "push", reason: .registration)
            let mixed = try queue.reserve(count: 2, block: .zero).map(\.job.subscriptionID)
            return (singles, mixed)
        }
        #expect(singles == [[10], [11], [1]])
        #expect(mixed == [12, 2])
    }

    @Test("reserve waits for a job to arrive, and returns empty when none does")
    func blockingReserve() async throws {
        let (nothing, emptyWait, arrived, arrivalWait, waited) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("waiter", on: connection)
            var start = ContinuousClock.now
            let nothing = try queue.reserve(block: .milliseconds(200))
            let emptyWait = ContinuousClock.now - start
            let waiter = try unwrap(try connection.command("CLIENT", "ID").int, "the waiter's client id")
            let blockedFirst = Mutex(false)
            start = ContinuousClock.now
            Thread {
                // The job arrives once the waiter's read is blocked on Redis (its client flagged b).
                let observer = try? deployment.connect()
                let blocked = eventuallyOnThisThread(within: .seconds(4), every: .milliseconds(5)) {
                    let client = (try? observer?.command("CLIENT", "LIST", "ID", waiter).string) ?? nil
                    return client?.split(separator: " ").contains("flags=b") == true
                }
                blockedFirst.withLock { $0 = blocked }
                _ = try? deployment.queue("producer").enqueue(subscriptionID: 99, run: "push", reason: .notification)
            }.start()
            let arrived = try queue.reserve(block: .seconds(5)).map(\.job.subscriptionID)
            return (nothing.count, emptyWait, arrived, ContinuousClock.now - start, blockedFirst.withLock { $0 })
        }
        #expect(nothing == 0)
        #expect(emptyWait >= .milliseconds(190))
        #expect(waited, "the read was blocked on Redis when the job arrived")
        #expect(arrived == [99])
        #expect(arrivalWait < .seconds(5), "the read returned when the job arrived, not at the end of its block")
    }
}
