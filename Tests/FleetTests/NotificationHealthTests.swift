import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Ledger
import RedisClient
import TestSupport
import Testing

/// An app whose V2 notifications do not arrive goes back to nightly checks by itself, and to the
/// notification-first schedule once they come again; each pass records why.
@Suite struct NotificationHealthTests {
    @Test func anAppWithoutNotificationsIsCheckedNightlyUntilTheyArrive() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 20)
                _ = try await setup.load(runID: "first")
                #expect(try await setup.work().queue.dead == 0)
                let active = try await setup.count("SELECT count(*) AS n FROM subscriptions WHERE status = 'active'")
                #expect(active > 0)
                // A day and more since the last checks, and the audit still far away.
                try await setup.execute("""
                    UPDATE subscriptions SET last_verified_at = now() - interval '2 days', next_check_at = now() + interval '20 days'
                    """)

                let quiet = try await setup.schedule(runID: "quiet", now: Date())
                #expect(quiet.checkedNightly == active && quiet.enqueued == active, "\(quiet)")
                let verdict = try #require(try await Self.verdicts(setup.settings).first)
                #expect(!verdict.notificationFirst && verdict.why == "no V2 notification arrived in the last 24 hours")
                let status = try await setup.status(within: .zero) { _ in true }
                #expect(status.apps.first?.schedule == verdict, "status shows the app's schedule")
                #expect(status.text.contains("schedule      NIGHTLY: no V2 notification arrived in the last 24 hours"), "\(status.text)")
                _ = try await setup.work()

                // Notifications arrive again: the next pass leaves the active ones to their audit.
                try await setup.execute("""
                    INSERT INTO notifications (dedupe_key, version, notification_type, outcome, meaning, subscription_id)
                    SELECT 'v2:' || id, 2, 'DID_RENEW', 'settled', 'the subscription renewed', id FROM subscriptions
                    """)
                try await setup.execute("""
                    UPDATE subscriptions SET last_verified_at = now() - interval '2 days', next_check_at = now() + interval '20 days'
                    """)
                let told = try await setup.schedule(runID: "told", now: Date())
                #expect(told.checkedNightly == 0 && told.enqueued == 0, "\(told)")
                let healthy = try #require(try await Self.verdicts(setup.settings).first)
                #expect(healthy.notificationFirst && healthy.notified == setup.subscriptions.count, "\(healthy)")
            }
        }
    }

    static func verdicts(_ settings: FleetSettings) async throws -> [NotificationHealth] {
        try await onOwnThread {
            try NotificationHealth.last(on: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix))
        }
    }
}
