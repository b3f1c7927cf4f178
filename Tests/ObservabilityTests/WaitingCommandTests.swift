import FleetConfiguration
import Foundation
import JobQueue
import Ledger
import RedisClient
import TestSupport
import Testing

/// `receiptfleet waiting` as an operator runs it: the waiting jobs listed, one subscription's
/// retried now, another's deleted, the rest sent to the dead letters; each change audited.
@Suite struct WaitingCommandTests {
    @Test func waitingJobsAreListedRetriedDeletedAndBuried() async throws {
        try await Deployment.with { deployment in
            let environment = deployment.settings.processEnvironment.merging([Settings.metricsAddress.variable: "off"]) { $1 }
            func receiptfleet(_ arguments: String...) async throws -> (status: Int32, output: String) {
                try await runFleetCommand(arguments, environment: environment)
            }
            let settings = deployment.settings
            try await onOwnThread {
                let queue = try JobQueue(
                    connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                    consumer: "waiting-test")
                try queue.enqueue(subscriptionIDs: [31, 32, 33, 34], run: "night", reason: .nightly)
                for reserved in try queue.reserve(count: 4, block: .zero) {
                    _ = try queue.retry(reserved, after: JobFailure(errorClass: "timeout", message: "no answer"))
                }
                // Due in an hour, not within the jittered backoff's 30 s, so none is due while the test runs.
                let later = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
                for item in try queue.delayedJobs() {
                    try RedisConnection(settings.redisConfiguration()).command("ZADD", QueueKeys(prefix: settings.keyPrefix).delayed, "XX", later, item.text)
                }
            }
            let listed = try await receiptfleet("waiting", "list")
            #expect(listed.status == 0 && listed.output.contains("subscription 31  nightly  attempt 1"), "\(listed.output)")
            #expect(try await receiptfleet("waiting", "retry").status != 0, "a change names its jobs, or --all")

            let retried = try await receiptfleet("waiting", "retry", "--subscription", "31")
            #expect(retried.status == 0 && retried.output.contains("1 of 1 waiting jobs retried now."), "\(retried.output)")
            let deleted = try await receiptfleet("waiting", "delete", "--subscription", "32")
            #expect(deleted.output.contains("1 of 1 waiting jobs deleted."), "\(deleted.output)")
            // All of a filter: first only how many, then with --yes; 31, retried now, is due already and not counted again.
            let none = try await receiptfleet("waiting", "delete", "--all", "--run", "other")
            #expect(none.status == 0 && none.output.contains("No waiting job matching run=other."), "\(none.output)")
            let asked = try await receiptfleet("waiting", "retry", "--all", "--retried")
            #expect(asked.output.contains("3 waiting jobs matching tries=retried: add --yes to retry them now."), "\(asked.output)")
            let retriedAll = try await receiptfleet("waiting", "retry", "--all", "--retried", "--run", "night", "--yes")
            #expect(retriedAll.output.contains("2 waiting jobs retried now (all matching run=night tries=retried)."), "\(retriedAll.output)")
            #expect(try await receiptfleet("waiting", "retry", "--all", "--retried", "--not-tried").status != 0)
            #expect(try await receiptfleet("waiting", "list", "--reason", "sometimes").status != 0)
            let listed2 = try await receiptfleet("waiting", "list", "--reason", "nightly", "--run", "night")
            #expect(listed2.output.contains("3 of 3 waiting jobs match reason=nightly run=night."), "\(listed2.output)")
            let unconfirmed = try await receiptfleet("waiting", "bury", "--all")
            #expect(unconfirmed.output.contains("3 waiting jobs: add --yes to send them to the dead letters."), "\(unconfirmed.output)")
            #expect(try await deployment.queueStats().dead == 0, "nothing buried without --yes")
            let buried = try await receiptfleet("waiting", "bury", "--all", "--yes")
            // The ones retried now are due, still waiting for the promoter (no worker runs here): all three go.
            #expect(buried.output.contains("3 waiting jobs sent to the dead letters."), "\(buried.output)")
            let stats = try await deployment.queueStats()
            #expect(stats.dead == 3 && stats.delayedDue + stats.delayedLater + stats.ready == 0, "\(stats)")
            let database = deployment.database
            let actions = try await onOwnThread { try Ledger(try database.connect()).auditTrail(limit: 10).map(\.action) }
            #expect(Set(actions).isSuperset(of: ["jobs.retry", "jobs.delete", "jobs.bury"]), "\(actions)")
        }
    }
}
