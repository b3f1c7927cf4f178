import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Bulk enqueue and the job text")
struct EnqueueTests {
    @Test("bulk enqueue adds each subscription once while it is queued: a restarted run or another run adds only the missing")
    func oncePerQueuedSubscription() async throws {
        let ids = Array(Int64(1)...2500)  // more than one batch, and more than one pipeline
        let result = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("scheduler", on: connection)
            let first = try queue.enqueue(subscriptionIDs: ids, run: "2025-06-01", reason: .nightly)
            let again = try queue.enqueue(subscriptionIDs: ids + [2501, 2501], run: "2025-06-01", reason: .nightly)
            let nextRun = try queue.enqueue(subscriptionIDs: ids, run: "2025-06-02", reason: .nightly)
            let ttl = try connection.command("TTL", deployment.keys.queued).int
            let length = try connection.length(ofStream: deployment.keys.ready)
            let sample = try queue.reserve(count: 1, block: .zero).first?.job
            return (first, again, nextRun, ttl, length, sample)
        }
        let (first, again, nextRun, ttl, length, sample) = result
        #expect(first.added == 2500 && first.alreadyQueued == 0)
        #expect(again.added == 1 && again.alreadyQueued == 2501)
        #expect(nextRun.added == 0 && nextRun.alreadyQueued == 2500)
        #expect(ttl == -1, "the queued bitmap follows the jobs, not a clock")
        #expect(length == 2501)
        #expect(sample?.subscriptionID == 1)
        #expect(sample?.runID == "2025-06-01")
        #expect(sample?.reason == .nightly)
        #expect(sample?.attempt == 0)
        #expect(sample?.firstFailedAt == nil)
    }

    @Test("one job for one event: each call adds a job, in its reason's stream, and sets no queued bit")
    func singleJobs() async throws {
        let (jobs, high, ready, queuedBits, reserved) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("api", on: connection)
            let jobs = try [
                queue.enqueue(subscriptionID: 7, run: "notification-1", reason: .notification),
                queue.enqueue(subscriptionID: 7, run: "notification-1", reason: .notification),
                queue.enqueue(subscriptionID: 8, run: "registration", reason: .registration),
            ].compactMap { $0 }
            let high = try connection.length(ofStream: deployment.keys.readyHigh)
            let ready = try connection.length(ofStream: deployment.keys.ready)
            let queuedBits = try connection.command("BITCOUNT", deployment.keys.queued).int
            let reserved = try queue.reserve(count: 3, block: .zero).map(\.job)
            return (jobs, high, ready, queuedBits, reserved)
        }
        #expect(high == 3 && ready == 0, "notification and registration jobs go ahead of the nightly backlog")
        #expect(queuedBits == 0)
        #expect(reserved == jobs)
        #expect(jobs[0].reason == .notification && jobs[0].attempt == 0 && jobs[0].enqueuedAt > 0)
    }

    @Test("with a name for its occurrence, a single job is added once however often it is enqueued")
    func onceJobs() async throws {
        let (first, again, other, high) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("api", on: connection)
            let first = try queue.enqueue(subscriptionID: 7, run: "notification-1", reason: .notification, once: "notification-1")
            let again = try queue.enqueue(subscriptionID: 7, run: "notification-1", reason: .notification, once: "notification-1")
            let other = try queue.enqueue(subscriptionID: 7, run: "notification-2", reason: .notification, once: "notification-2")
            return (first, again, other, try connection.length(ofStream: deployment.keys.readyHigh))
        }
        #expect(first != nil && other != nil)
        #expect(again == nil, "the occurrence's job is in the queue already")
        #expect(high == 2)
    }

    @Test("invalid ids and run ids are refused before anything is enqueued; the edge ids are fine")
    func invalidInput() async throws {
        let (errors, lengthAfterErrors, edges) = try await withDeployment { deployment, connection in
            let queue = try deployment.queue("scheduler", on: connection)
            var errors: [QueueError] = []
            let cases: [([Int64], String)] = [
                ([1, -1], "r"), ([1, 4_294_967_296], "r"), ([1], "a|b"), ([1], ""), ([1], String(repeating: "x", count: 65)),
            ]
            for (ids, run) in cases {
                do throws(QueueError) {
                    try queue.enqueue(subscriptionIDs: ids, run: run, reason: .nightly)
                } catch {
                    errors.append(error)
                }
            }
            let lengthAfterErrors = try connection.length(ofStream: deployment.keys.ready)
            let edges = try queue.enqueue(subscriptionIDs: [0, 4_294_967_295], run: "edges", reason: .nightly)
            return (errors, lengthAfterErrors, edges)
        }
        #expect(errors.count == 5)
        #expect(errors.allSatisfy { if case .invalidArgument = $0 { true } else { false } })
        #expect(errors.first.map { "\($0)".contains("-1") } == true)
        #expect(lengthAfterErrors == 0)
        #expect(edges.added == 2)
    }

    @Test("a key prefix must carry a Redis Cluster hash tag")
    func prefixNeedsHashTag() throws {
        for prefix in ["rf", "{}rf", "rf}{", "{rf"] {
            #expect(throws: QueueError.self, "\(prefix)") { try QueueKeys(prefix: prefix) }
        }
        let keys = try QueueKeys(prefix: "{rf-staging}:queue")
        #expect(keys.ready == "{rf-staging}:queue:jobs")
        #expect(keys.queued == "{rf-staging}:queue:queued")
        #expect(try QueueKeys().delayed == "{rf}:delayed")
    }

    @Test("the job text round-trips, and garbage is a decoding error, never a crash")
    func jobText() throws {
        for reason in Job.Reason.allCases {
            for firstFailedAt in [nil, Int64(1_748_736_000_500)] {
                let job = Job(subscriptionID: 4711, runID: "2025-06-01", reason: reason, attempt: 3,
                              enqueuedAt: 1_748_736_000_000, firstFailedAt: firstFailedAt)
                #expect(try Job(encoded: job.encoded) == job)
            }
        }
        #expect(Job(subscriptionID: 4711, runID: "2025-06-01", reason: .nightly, enqueuedAt: 1_748_736_000_000).encoded
                == "4711|2025-06-01|n|0|1748736000000|")
        let garbage = ["", "|||||", "1|r|n|0|1", "1|r|n|0|1||", "x|r|n|0|1|", "1||n|0|1|", "1|r|nightly|0|1|",
                       "1|r|n|-1|1|", "1|r|n|0|-1|", "1|r|n|0|1|x", "99999999999999999999|r|n|0|1|", "1|r|n|0|1|\u{0}"]
        for text in garbage {
            #expect(throws: QueueError.self, "\(text)") { try Job(encoded: text) }
        }
    }
}
