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
}
