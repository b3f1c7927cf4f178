import Fleet
import Foundation
import JobQueue
import Ledger
import RedisClient
import TestSupport
import Testing

/// After a Redis loss the queue holds nothing, yet `serve` has told Apple it took the notifications
/// whose jobs were in it: the scheduler's next pass finds them in PostgreSQL and enqueues them again.
@Suite struct NotificationRecoveryTests {
    @Test func aPassAfterARedisLossEnqueuesAgainTheNotificationsNotYetVerified() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 4)
                _ = try await setup.load(runID: "night")
                #expect(try await setup.work().queue.dead == 0)
                let ids = try await setup.query("SELECT id FROM subscriptions ORDER BY id") { try $0["id"].int64() ?? 0 }
                try #require(ids.count >= 4)
                let settings = setup.settings

                // Notifications arrive after the night: two enqueued as `serve` does, one whose process
                // died before enqueueing, and one that a later verification already answered.
                let lost = try await onOwnThread {
                    let ledger = Ledger(try database.connect())
                    let queue = try JobQueue(
                        connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                        consumer: "test")
                    var awaiting: [Int64] = []
                    for (index, subscriptionID) in ids.prefix(4).enumerated() {
                        let recorded = try ledger.record(NotificationRecord(
                            dedupeKey: "v2:recovery-\(index)", version: 2, notificationType: "DID_RENEW", meaning: "renewed",
                            subscriptionID: subscriptionID, outcome: .queued))
                        if index < 2 {
                            let occurrence = "notification-\(recorded.id)"
                            try queue.enqueue(subscriptionID: subscriptionID, run: occurrence, reason: .notification, once: occurrence)
                            try ledger.markJobEnqueued(notificationID: recorded.id)
                        }
                        if index < 3 { awaiting.append(subscriptionID) }
                    }
                    // The fourth arrived a day ago, before the night's verification of its subscription.
                    _ = try database.connect().query(
                        "UPDATE notifications SET received_at = now() - interval '1 day' WHERE dedupe_key = 'v2:recovery-3'")
                    return awaiting
                }
                #expect(try await setup.status(within: .zero) { _ in true }.queue.readyHigh == 2)

                // While the queue still holds the first two, a pass adds only the one never enqueued.
                let before = try await setup.schedule(runID: "pass-1", now: Date())
                #expect(before.notificationsRecovered == 1)
                #expect(try await setup.status(within: .zero) { _ in true }.queue.readyHigh == 3)

                // Redis is lost, with the jobs and the once-keys: the next pass brings all three back, once.
                try await onOwnThread {
                    try RedisConnection(settings.redisConfiguration()).deleteKeys(prefixed: settings.keyPrefix)
                }
                let after = try await setup.schedule(runID: "pass-2", now: Date())
                let again = try await setup.schedule(runID: "pass-3", now: Date())
                #expect(after.notificationsRecovered == 3 && again.notificationsRecovered == 0)
                #expect(try await setup.status(within: .zero) { _ in true }.queue.readyHigh == 3)

                // Worked off, they are answered: no pass finds them again.
                #expect(try await setup.work().queue.dead == 0)
                let verified = try await setup.query("""
                    SELECT DISTINCT subscription_id FROM verifications WHERE run_id LIKE 'notification-%' ORDER BY 1
                    """) { try $0["subscription_id"].int64() ?? 0 }
                #expect(verified == lost.sorted())
                #expect(try await setup.schedule(runID: "pass-4", now: Date()).notificationsRecovered == 0)
            }
        }
    }
}
