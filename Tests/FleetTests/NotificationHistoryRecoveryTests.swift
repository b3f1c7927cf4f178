import Foundation
import TestSupport
import Testing

/// `receiptfleet notifications recover`, as an operator runs it after `serve` was down: every V2
/// notification Apple's history holds comes into the ledger once, through the intake `serve` uses,
/// and a second run brings in nothing (issue 21, part 2).
@Suite struct NotificationHistoryRecoveryTests {
    @Test func recoverBringsInEveryNotificationOnceAndASecondRunNothing() async throws {
        try await FleetSetup.withServerAPIKey(receipts: 40) { setup, keyed in
            let environment = keyed.merging(["RECEIPTFLEET_NOTIFICATION_ENVIRONMENTS": "Production,Sandbox"]) { $1 }
            let recover = ["notifications", "recover", "--since", "29d"]

            let dry = try await runFleetCommand(recover + ["--dry-run"], environment: environment)
            #expect(dry.status == 0, "\(dry.output)")
            let found = try #require(summaryFigures(in: dry.output, after: "Would bring in "), "\(dry.output)")
            #expect(found.new == found.of && found.of >= 20, "a month of renewals, refunds and expiries: \(dry.output)")
            #expect(try await setup.count("SELECT count(*) AS n FROM notifications") == 0, "a dry run changes nothing")
            let earlier = try await runFleetCommand(["notifications", "recover", "--since", "60d", "--dry-run"], environment: environment)
            #expect(earlier.status == 0 && earlier.output.contains("Apple keeps 30 days of Sandbox history: from "), "\(earlier.output)")

            let first = try await runFleetCommand(recover, environment: environment)
            #expect(first.status == 0, "\(first.output)")
            #expect(summaryFigures(in: first.output, after: "Brought in ").map { $0.new == found.of && $0.of == found.of } == true,
                    "\(first.output)")
            #expect(try await setup.count("SELECT count(*) AS n FROM notifications WHERE version = 2") == found.of)
            #expect(try await setup.count("SELECT count(DISTINCT dedupe_key) AS n FROM notifications") == found.of)
            #expect(try await setup.count("SELECT count(*) AS n FROM notifications WHERE subscription_id IS NOT NULL") == found.of,
                    "each names a subscription of the ledger")

            let again = try await runFleetCommand(recover, environment: environment)
            #expect(again.output.contains("Brought in 0 of \(found.of) notifications (duplicate \(found.of))."), "\(again.output)")
            #expect(try await setup.count("SELECT count(*) AS n FROM notifications") == found.of)
            let audited = try await setup.count("SELECT count(*) AS n FROM audit_log WHERE action = 'notifications.recover'")
            #expect(audited == 2, "the two runs; a dry run changes nothing and is not recorded")
            let status = try await runFleetCommand(["status"], environment: environment)
            #expect(status.output.contains("missed notif. last recovery "), "\(status.output)")
            #expect(status.output.contains(": \(found.of) in Apple's history, 0 new"), "\(status.output)")
        }
    }

    @Test func recoverRefusesWithoutAServerAPIKeyOrWithAWindowBackwards() async throws {
        try await TestDatabase.with { database in
            try await LiveSimulator.with { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: FleetEndToEndTests.nowMs, receipts: 1)
                let keyless = try await runFleetCommand(["notifications", "recover", "--since", "72h"], environment: setup.environment)
                #expect(keyless.status != 0 && keyless.output.contains("through the App Store Server API: configure its key"), "\(keyless.output)")
                let backwards = try await runFleetCommand(
                    ["notifications", "recover", "--since", "1h", "--until", "2h"], environment: setup.environment)
                #expect(backwards.status != 0, "\(backwards.output)")
            }
        }
    }
}
