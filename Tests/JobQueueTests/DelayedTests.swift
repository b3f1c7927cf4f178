import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("The delayed set and its promoter")
struct DelayedTests {
    @Test("due jobs are promoted in due order (not insertion order), in batches; jobs not yet due stay until due")
    func promotionOrder() async throws {
        let result = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let now = try deployment.clock.now(on: connection)
            // Inserted in this order; due in the order 2, 3, 1; job 4 is not due for a minute.
            let dueTimes: [(Int64, Int64)] = [(1, now), (2, now - 3000), (3, now - 2000), (4, now + 60_000)]
            for (id, due) in dueTimes {
                try queue.schedule(Job(subscriptionID: id, runID: "later", reason: .renewal, enqueuedAt: due), at: due)
            }
            let firstBatch = try queue.promoteDue(batch: 2)
            let afterFirst = try queue.reserve(count: 10, block: .zero).map(\.job.subscriptionID)
            let secondBatch = try queue.promoteDue(batch: 2)
            let afterSecond = try queue.reserve(count: 10, block: .zero).map(\.job.subscriptionID)
            let waiting = try connection.sortedSet(deployment.keys.delayed).map { try Job(encoded: $0.member).subscriptionID }
            try deployment.clock.advance(by: .seconds(60) - .milliseconds(1), on: connection)
            let aMomentEarly = try queue.promoteDue()
            try deployment.clock.advance(by: .milliseconds(1), on: connection)
            let due = (try queue.promoteDue(), try queue.reserve(count: 10, block: .zero).map(\.job.subscriptionID))
            return (firstBatch, afterFirst, secondBatch, afterSecond, waiting, aMomentEarly, due)
        }
        let (firstBatch, afterFirst, secondBatch, afterSecond, waiting, aMomentEarly, due) = result
        #expect(firstBatch == 2)
        #expect(afterFirst == [2, 3])
        #expect(secondBatch == 1)
        #expect(afterSecond == [1], "a job due now is due")
        #expect(waiting == [4])
        #expect(aMomentEarly == 0)
        #expect(due.0 == 1 && due.1 == [4])
    }

    @Test("bringing forward makes due now what is due within the window (a halt's postponements), and leaves later jobs their time")
    func bringForwardWithinTheWindow() async throws {
        let (moved, dues, now) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let now = try deployment.clock.now(on: connection)
            // 1 is due already, 2 and 3 within the 30 s window (3 at its very end), 4 a second after it.
            for (id, due) in [(1, now - 1_000), (2, now + 5_000), (3, now + 30_000), (4, now + 31_000)] as [(Int64, Int64)] {
                try queue.schedule(Job(subscriptionID: id, runID: "later", reason: .renewal, enqueuedAt: now), at: due)
            }
            let moved = try queue.bringForward(dueWithin: .seconds(30))
            let dues = try connection.sortedSet(deployment.keys.delayed).map { (try Job(encoded: $0.member).subscriptionID, $0.score) }
            return (moved, Dictionary(uniqueKeysWithValues: dues), now)
        }
        #expect(moved == 2, "only the jobs not yet due within the window count")
        #expect(dues == [1: now - 1_000, 2: now, 3: now, 4: now + 31_000])
    }

    @Test("a page of delayed jobs from any offset a caller sends is a page, empty past the end, never a trap")
    func anyOffsetIsAPage() async throws {
        let pages = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let now = try deployment.clock.now(on: connection)
            try queue.schedule(Job(subscriptionID: 1, runID: "later", reason: .renewal, enqueuedAt: now), at: now + 60_000)
            return try [0, 1, Int.max, Int.max - 99].map { try queue.delayedJobs(offset: $0, limit: 100).count }
        }
        #expect(pages == [1, 0, 0, 0])
    }

    @Test("scheduling the same job twice keeps one; a promoted high-priority job returns to its stream")
    func scheduleIdempotentAndLanes() async throws {
        let (added, members, highLength, normalLength) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let now = try connection.redisNow()
            let check = Job(subscriptionID: 5, runID: "renewals", reason: .renewal, enqueuedAt: now - 10)
            let push = Job(subscriptionID: 6, runID: "push", reason: .notification, enqueuedAt: now - 10)
            let added = [
                try queue.schedule(check, at: now - 10), try queue.schedule(check, at: now - 5),
                try queue.schedule(push, at: now - 10),
            ]
            let members = try connection.command("ZCARD", deployment.keys.delayed).int
            _ = try queue.promoteDue()
            return (added, members, try connection.length(ofStream: deployment.keys.readyHigh),
                    try connection.length(ofStream: deployment.keys.ready))
        }
        #expect(added == [true, false, true])
        #expect(members == 2)
        #expect(highLength == 1)
        #expect(normalLength == 1)
    }

    @Test("promoters running at once move each due job exactly once")
    func concurrentPromoters() async throws {
        let deployment = try Deployment()
        let jobs = 3000
        try await onOwnThread {
            let connection = try deployment.connect()
            let queue = try deployment.queue("setup", on: connection)
            let now = try connection.redisNow()
            for id in 0..<jobs {
                try queue.schedule(Job(subscriptionID: Int64(id), runID: "r", reason: .renewal, enqueuedAt: now), at: now)
            }
        }
        let moved = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<4 {
                group.addTask {
                    try await onOwnThread {
                        let queue = try deployment.queue("promoter-\(index)")
                        var total = 0
                        while case let count = try queue.promoteDue(batch: 100), count > 0 { total += count }
                        return total
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let (ready, distinct) = try await onOwnThread {
            let connection = try deployment.connect()
            defer { try? deployment.deleteKeys(connection) }
            let queue = try deployment.queue("reader", on: connection)
            let reserved = try queue.reserve(count: jobs + 10, block: .zero)
            return (try connection.length(ofStream: deployment.keys.ready), Set(reserved.map(\.job.subscriptionID)).count)
        }
        #expect(moved == jobs)
        #expect(ready == Int64(jobs))
        #expect(distinct == jobs)
    }
}
