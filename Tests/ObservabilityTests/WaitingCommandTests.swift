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
            }
            let listed = try await receiptfleet("waiting", "list")
            #expect(listed.status == 0 && listed.output.contains("subscription 31  nightly  attempt 1"), "\(listed.output)")
            #expect(try await receiptfleet("waiting", "retry").status != 0, "a change names its jobs, or --all")

            let retried = try await receiptfleet("waiting", "retry", "--subscription", "31")
            #expect(retried.status == 0 && retried.output.contains("1 of 1 waiting jobs retried now."), "\(retried.output)")
            let deleted = try await receiptfleet("waiting", "delete", "--subscription", "32")
            #expect(deleted.output.contains("1 of 1 waiting jobs deleted."), "\(deleted.output)")
            let buried = try await receiptfleet("waiting", "bury", "--all")
            // The one retried now is due, still waiting for the promoter (no worker runs here): all three go.
            #expect(buried.output.contains("3 of 3 waiting jobs sent to the dead letters."), "\(buried.output)")
            let stats = try await deployment.queueStats()
            #expect(stats.dead == 3 && stats.delayedDue + stats.delayedLater + stats.ready == 0, "\(stats)")
            let database = deployment.database
            let actions = try await onOwnThread { try Ledger(try database.connect()).auditTrail(limit: 10).map(\.action) }
            #expect(Set(actions).isSuperset(of: ["jobs.retry", "jobs.delete", "jobs.bury"]), "\(actions)")
        }
    }
}
