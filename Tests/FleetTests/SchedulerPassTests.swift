import Fleet
import Foundation
import TestSupport
import Testing

/// `receiptfleet schedule --every` during a backlog: each pass has a run id of its own, and none
/// may enqueue again what an earlier pass left waiting.
@Suite struct SchedulerPassTests {
    @Test func passesWhileTheWorkersAreStoppedAddNothingAndAckedJobsAreEnqueuedAgain() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 20)
                let first = try await setup.load(runID: "pass-1")
                let waiting = try await setup.status(within: .zero) { _ in true }.queue.ready
                let second = try await setup.schedule(runID: "pass-2", now: Date())
                let stillWaiting = try await setup.status(within: .zero) { _ in true }.queue.ready
                #expect(first.enqueued == setup.subscriptions.count && waiting == first.enqueued)
                #expect(second.found == first.found && second.enqueued == 0 && second.alreadyQueued == first.found)
                #expect(stillWaiting == waiting)

                // Once the workers have acked the jobs, a pass when the next checks are due enqueues them again.
                let settled = try await setup.work()
                #expect(settled.queue.dead == 0)
                let later = try await setup.schedule(runID: "pass-3", now: Date().addingTimeInterval(31 * 86_400))
                #expect(later.found > 0 && later.enqueued == later.found)
            }
        }
    }
}
