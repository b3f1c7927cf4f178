import AppStoreSimulator
import Foundation
import TestSupport
import Testing

/// The simulator sends V2 notifications to `serve` as App Store Connect does (issue 21, part 2):
/// `notifications test` says whether Apple's test notification reached this deployment, and what
/// `serve` missed while it was down comes in with `notifications recover`, each notification once.
@Suite struct NotificationDeliveryTests {
    static let day: Int64 = 86_400_000

    /// The harness's serve, trusting the simulator's signing root, with the command line's settings
    /// for it; the simulator's `fleet` receipts send notifications.
    static func with(fleet: Int = 0, _ body: @escaping (APIHarness, [String: String]) async throws -> Void) async throws {
        let root = try SimulatorSigningChain().root
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("notifications"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await APIHarness.with(
            configure: { $0.trustedRoots.append(root); $0.notificationEnvironments = [.production, .sandbox] }, serverAPI: true,
            serverAPIFleet: fleet
        ) { api in
            let environment = api.fleet.processEnvironment
                .merging(try SimulatedServerAPI.environment(for: api.simulator, filesIn: directory)) { $1 }
                .merging(["RECEIPTFLEET_NOTIFICATION_ENVIRONMENTS": "Production,Sandbox"]) { $1 }
            try await body(api, environment)
        }
    }

    /// The setup check an operator runs after pointing Apple at a new URL.
    @Test func theTestNotificationSaysWhetherItReachedThisServe() async throws {
        try await Self.with { api, environment in
            let nowhere = try await runFleetCommand(["notifications", "test", "--wait", "5"], environment: environment)
            #expect(nowhere.status != 0 && nowhere.output.contains("4040007"), "no server URL: \(nowhere.output)")

            try api.simulator.store.sendNotifications(to: api.baseURL + "/v1/notifications/apple")
            let reached = try await runFleetCommand(["notifications", "test", "--wait", "10"], environment: environment)
            #expect(reached.status == 0, "\(reached.output)")
            #expect(reached.output.contains("Apple's attempts: SUCCESS") && reached.output.contains("serve recorded it"), "\(reached.output)")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE notification_type = 'TEST'") == 1)

            try api.simulator.store.sendNotifications(to: api.baseURL + "/v1/notifications/apple", knobs: NotificationKnobs(drop: true))
            let dropped = try await runFleetCommand(["notifications", "test", "--wait", "10"], environment: environment)
            #expect(dropped.status != 0, "\(dropped.output)")
            #expect(dropped.output.contains("Apple's attempts: NO_RESPONSE") && dropped.output.contains("could not deliver"), "\(dropped.output)")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE notification_type = 'TEST'") == 1)
        }
    }

    /// Ten days of notifications sent while serve was down (dropped), then ten delivered: a
    /// recovery of the failures brings in exactly the missed ones, and a recovery of everything
    /// finds only duplicates.
    @Test func whatServeMissedIsRecoveredOnceAndWhatItTookStaysOnce() async throws {
        try await Self.with(fleet: 30) { api, environment in
            let store = api.simulator.store
            let start = store.clock.nowMs
            try store.sendNotifications(to: api.baseURL + "/v1/notifications/apple", knobs: NotificationKnobs(drop: true))
            store.clock.advance(byMs: 10 * Self.day)
            await store.sendDueNotifications()
            #expect(try await api.count("SELECT count(*) AS n FROM notifications") == 0, "serve was down")

            let window = ["--since", Self.iso(start - Self.day), "--until", Self.iso(start + 25 * Self.day)]
            let failures = try await runFleetCommand(["notifications", "recover", "--only-failures"] + window, environment: environment)
            #expect(failures.status == 0, "\(failures.output)")
            let missed = try #require(summaryFigures(in: failures.output, after: "Brought in "), "\(failures.output)")
            #expect(missed.new == missed.of && missed.of > 0, "\(failures.output)")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications") == missed.of)
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE recovered AND signed_at IS NOT NULL") == missed.of,
                    "each is marked as brought in by recovery, with Apple's signing time")

            try store.sendNotifications(to: api.baseURL + "/v1/notifications/apple")
            store.clock.advance(byMs: 10 * Self.day)
            await store.sendDueNotifications()
            let delivered = try await api.count("SELECT count(*) AS n FROM notifications") - missed.of
            #expect(delivered > 0, "serve took the second ten days' notifications itself")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE NOT recovered AND signed_at IS NOT NULL") == delivered)

            let everything = try await runFleetCommand(["notifications", "recover"] + window, environment: environment)
            let total = missed.of + delivered
            #expect(everything.output.contains("Brought in 0 of \(total) notifications (duplicate \(total))."), "\(everything.output)")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications") == total)
            #expect(try await api.count("SELECT count(DISTINCT dedupe_key) AS n FROM notifications") == total)
        }
    }

    /// The six-hourly timer's runs (`--resume`) each start where the last one ended, an hour
    /// before: the second reads the days since the first, not the first's failures again, which
    /// Apple lists until they are delivered.
    @Test func aResumedRecoveryReadsOnlyWhatCameSinceTheLastRun() async throws {
        try await Self.with(fleet: 30) { api, environment in
            let store = api.simulator.store
            let start = store.clock.nowMs
            try store.sendNotifications(to: api.baseURL + "/v1/notifications/apple", knobs: NotificationKnobs(drop: true))
            let recover = { (days: Int64) in
                try await runFleetCommand(
                    ["notifications", "recover", "--only-failures", "--resume", "--since", Self.iso(start - Self.day),
                     "--until", Self.iso(start + days * Self.day)], environment: environment)
            }
            store.clock.advance(byMs: 5 * Self.day)
            await store.sendDueNotifications()
            let first = try await recover(5)
            #expect(first.status == 0 && !first.output.contains("resuming"), "no run before it: \(first.output)")
            let firstFigures = try #require(summaryFigures(in: first.output, after: "Brought in "), "\(first.output)")
            #expect(firstFigures.new == firstFigures.of && firstFigures.of > 0)

            store.clock.advance(byMs: 3 * Self.day)
            await store.sendDueNotifications()
            let second = try await recover(8)
            #expect(second.output.contains("resuming after the last run: from \(Self.iso(start + 5 * Self.day - 3_600_000))"), "\(second.output)")
            let secondFigures = try #require(summaryFigures(in: second.output, after: "Brought in "), "\(second.output)")
            let total = try await api.count("SELECT count(*) AS n FROM notifications")
            #expect(secondFigures.new > 0 && total == firstFigures.of + secondFigures.new)
            // Only the hour's overlap is read twice; a run from --since reads the first run's failures again.
            let overlap = try await api.count(
                "SELECT count(*) AS n FROM notifications WHERE signed_at >= to_timestamp(\(start / 1000 + 5 * 86_400 - 3_600))"
                    + " AND signed_at < to_timestamp(\(start / 1000 + 5 * 86_400))")
            #expect(secondFigures.of - secondFigures.new == overlap, "\(second.output)")
            let again = try await runFleetCommand(
                ["notifications", "recover", "--only-failures", "--since", Self.iso(start - Self.day), "--until", Self.iso(start + 8 * Self.day)],
                environment: environment)
            #expect(again.output.contains("Brought in 0 of \(total) notifications"), "\(again.output)")
        }
    }

    static func iso(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601)
    }
}
