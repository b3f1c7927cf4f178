import AppStoreSimulator
import Fleet
import Foundation
import TestSupport
import Testing

/// The fleet on a Redis Cluster: its queue's slot is resharded to another master and that master
/// then fails over to its replica, mid-run; nothing is lost or verified twice.
@Suite struct ClusterFleetTests {
    @Test(.enabled(if: TestCluster.fromEnvironment != nil, "needs the Redis cluster of scripts/services (scripts/test starts it)"))
    func aReshardAndAFailoverDuringARunLoseNothing() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestCluster.exclusively { cluster in try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(latency: Latency(meanMs: 20)), startMs: nowMs) { simulator in
                let setup = try FleetSetup(
                    database: database, simulator: simulator, nowMs: nowMs, receipts: 120, rateLimit: 20, redisURL: cluster.url)
                let scheduled = try await setup.load(runID: "cluster")
                let slot = try cluster.slot(of: setup.settings.keyPrefix)
                // The operator's moves, while the workers run (at 20 verifications a second the run
                // takes about 6 s, so both moves land well inside it even when a reshard is slow):
                // the reshard once 10 subscriptions are verified, the failover 20 later.
                let moves = Task {
                    try await eventually(every: .milliseconds(50)) { try await setup.verified(runID: "cluster") >= 10 }
                    _ = try await onOwnThread { try cluster.migrate(slot: slot) }
                    try await eventually(every: .milliseconds(50)) { try await setup.verified(runID: "cluster") >= 30 }
                    _ = try await onOwnThread { try cluster.failOver(slot: slot) }
                    return ContinuousClock.now
                }
                let settled = try await setup.work()
                let settledAt = ContinuousClock.now
                #expect(try await moves.value < settledAt, "both moves happened before the run was over")
                #expect(settled.isSettled && settled.queue.dead == 0)
                #expect(try await setup.verified(runID: "cluster") == scheduled.enqueued)
                #expect(try await setup.count("""
                    SELECT count(*) AS n FROM (SELECT subscription_id FROM verifications WHERE run_id LIKE 'cluster/%'
                    AND outcome = 'verified' GROUP BY subscription_id HAVING count(*) > 1) AS twice
                    """) == 0, "no job was verified twice")
                #expect(try await setup.groundTruthMismatches() == [])
            }
        } }
    }
}
