import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Leases: renewing the visibility timeout of jobs in hand")
struct LeaseTests {
    @Test("a renewal keeps held jobs from being reclaimed, in both streams, without counting a delivery")
    func renewalKeepsHeldJobs() async throws {
        let result = try await withDeployment { deployment, connection in
            let worker = try deployment.queue("worker", on: connection)
            try worker.enqueue(subscriptionIDs: [1, 2], run: "night", reason: .nightly)
            try worker.enqueue(subscriptionID: 10, run: "push", reason: .notification)
            let held = try worker.reserve(count: 3, block: .zero)
            let (renewedJobs, leftAlone) = (held.filter { $0.job.subscriptionID != 2 }, held.filter { $0.job.subscriptionID == 2 })
            // Real time: a pending entry's idle time grows on Redis's clock, which only waiting moves.
            Thread.sleep(forTimeInterval: 1.05)
            let idleBefore = try renewedJobs.map { try connection.pending($0).idle }
            // The keeper renews on a handle of its own, in the holder's name.
            let renewed = try deployment.queue("keeper").renewLeases(of: renewedJobs)
            let after = try renewedJobs.map { try connection.pending($0) }
            let reclaimed = try deployment.queue("other").reclaim(idleLongerThan: .seconds(1), maxDeliveries: 5)
            return (held.map(\.stream), renewed, idleBefore, after, reclaimed.jobs, leftAlone)
        }
        let (streams, renewed, idleBefore, after, reclaimed, leftAlone) = result
        #expect(Set(streams).count == 2, "the held jobs sit in both ready streams")
        #expect(renewed == 2)
        #expect(zip(idleBefore, after).allSatisfy { before, now in before >= 1_000 && now.idle < before })
        #expect(after.map { $0.consumer } == ["worker", "worker"])
        #expect(after.map { $0.deliveries } == [1, 1], "a renewal is not a delivery")
        #expect(reclaimed.map(\.entryID) == leftAlone.map(\.entryID), "only the job whose lease was not renewed is reclaimed")
    }

    @Test("a renewal never takes back a reclaimed job, nor brings back a settled one")
    func renewalSkipsJobsNoLongerHeld() async throws {
        let result = try await withDeployment { deployment, connection in
            let worker = try deployment.queue("worker", on: connection)
            try worker.enqueue(subscriptionIDs: [1, 2, 3], run: "night", reason: .nightly)
            let held = try worker.reserve(count: 3, block: .zero)
            try worker.ack(held[0])
            try worker.postpone(held[2], for: .seconds(60))
            let other = try deployment.queue("other")
            let taken = try other.reclaim(idleLongerThan: .zero, maxDeliveries: 5).jobs
            let renewed = try deployment.queue("keeper").renewLeases(of: held)
            let pendingTotal = try connection.command("XPENDING", deployment.keys.ready, QueueKeys.group).array?.first?.int
            return (
                taken.map(\.entryID), renewed, try connection.pending(held[1]), pendingTotal,
                try connection.length(ofStream: deployment.keys.ready), try connection.command("ZCARD", deployment.keys.delayed).int,
                try worker.ack(held[1]), try other.ack(taken[0]))
        }
        let (taken, renewed, reclaimedEntry, pendingTotal, streamLength, delayed, oldOwnerAck, newOwnerAck) = result
        #expect(taken.count == 1)
        #expect(renewed == 0)
        #expect(reclaimedEntry.consumer == "other", "the reclaimed job stays with its new holder")
        #expect(reclaimedEntry.deliveries == 2)
        #expect(pendingTotal == 1, "the acked and the postponed job are not reserved again")
        #expect(streamLength == 1, "the acked job stays deleted")
        #expect(delayed == 1)
        #expect(oldOwnerAck == false)
        #expect(newOwnerAck == true)
    }
}

extension RedisConnection {
    /// A reserved job's entry in its stream's pending list: who holds it, for how long (ms), how often delivered.
    func pending(_ reserved: ReservedJob) throws -> (consumer: String, idle: Int64, deliveries: Int64) {
        let reply = try command("XPENDING", reserved.stream, QueueKeys.group, reserved.entryID, reserved.entryID, 1)
        let entry = reply.array?.first?.array ?? []
        guard entry.count == 4, let consumer = entry[1].string, let idle = entry[2].int, let deliveries = entry[3].int else {
            return ("", -1, -1)
        }
        return (consumer, idle, deliveries)
    }
}
