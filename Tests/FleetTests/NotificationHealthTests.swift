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

                // Notifications arrive again, each signed ten minutes ago and applied three seconds later:
                // the next pass leaves the active ones to their audit.
                try await setup.execute("""
                    WITH signed AS (
                        INSERT INTO notifications (dedupe_key, version, notification_type, outcome, meaning, subscription_id, signed_at)
                        SELECT 'v2:' || id, 2, 'DID_RENEW', 'settled', 'the subscription renewed', id, now() - interval '10 minutes'
                        FROM subscriptions RETURNING subscription_id, signed_at)
                    INSERT INTO verifications (subscription_id, run_id, attempted_at, outcome)
                    SELECT subscription_id, 'notification', signed_at + interval '3 seconds', 'verified' FROM signed
                    """)
                try await setup.execute("""
                    UPDATE subscriptions SET last_verified_at = now() - interval '2 days', next_check_at = now() + interval '20 days'
                    """)
                let told = try await setup.schedule(runID: "told", now: Date())
                #expect(told.checkedNightly == 0 && told.enqueued == 0, "\(told)")
                let healthy = try #require(try await Self.verdicts(setup.settings).first)
                #expect(healthy.notificationFirst && healthy.notified == setup.subscriptions.count, "\(healthy)")
                #expect(healthy.freshnessP99Seconds.map { abs($0 - 3) < 0.01 } == true, "known 3 s after Apple signed: \(healthy)")
                let checks = try await setup.count("SELECT count(*) AS n FROM verifications WHERE run_id <> 'notification'")
                #expect(checks > 0 && healthy.checksPerSubscription == Double(checks) / Double(setup.subscriptions.count), "\(healthy)")
                let toldStatus = try await setup.status(within: .zero) { _ in true }
                #expect(toldStatus.text.contains("fresh within 3 s (p99)"), "\(toldStatus.text)")

                // Most of them only recovery brought in: Apple's sends do not reach serve, so nightly again.
                try await setup.execute("UPDATE notifications SET recovered = id % 4 <> 0")
                try await setup.execute("""
                    UPDATE subscriptions SET last_verified_at = now() - interval '2 days', next_check_at = now() + interval '20 days'
                    """)
                let recovered = try await setup.schedule(runID: "recovered", now: Date())
                #expect(recovered.checkedNightly == active, "\(recovered)")
                let unhealthy = try #require(try await Self.verdicts(setup.settings).first)
                #expect(!unhealthy.notificationFirst && unhealthy.why.hasPrefix("recovery brought in "), "\(unhealthy)")
            }
        }
    }

    static func verdicts(_ settings: FleetSettings) async throws -> [NotificationHealth] {
        try await onOwnThread {
            try NotificationHealth.last(on: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix))
        }
    }
}
