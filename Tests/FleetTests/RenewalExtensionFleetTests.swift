import AppStoreSimulator
import Foundation
import TestSupport
import Testing

/// `receiptfleet subscriptions extend`, as an operator runs it after an outage: Apple's rules are
/// read from the ledger first, a preview asks nothing, `--yes` asks the simulated Server API, and
/// the checks it queues make the workers announce `renewal_extended` (issue 30, part 4).
@Suite struct RenewalExtensionFleetTests {
    static let product = "com.receiptfleet.demo.pro.monthly"

    @Test func anOperatorsExtensionReachesTheLedgerAsRenewalExtended() async throws {
        try await FleetSetup.withServerAPIKey(receipts: 40) { setup, environment in
            _ = try await setup.work()
            func id(of kind: LifecycleKind, _ status: String) async throws -> Int {
                let ids = setup.subscriptions.filter { $0.receipt.kind == kind }.map { "'\($0.originalTransactionID)'" }
                return try await setup.count("""
                    SELECT min(id) AS n FROM subscriptions WHERE status = '\(status)' AND NOT is_trial
                        AND original_transaction_id IN (\(ids.joined(separator: ",")))
                    """)
            }
            let renewing = try await id(of: .renewing, "active")
            let expired = try await setup.count("SELECT min(id) AS n FROM subscriptions WHERE status = 'expired'")
            let extend = ["subscriptions", "extend", "--days", "7", "--reason", "service-issue"]

            let preview = try await runFleetCommand(extend + ["\(renewing)"], environment: environment)
            #expect(preview.status == 0 && preview.output.contains("would be extended by 7 days"), "\(preview.output)")
            #expect(try await setup.count("SELECT count(*) AS n FROM renewal_extensions") == 0, "a preview asks nothing")

            let before = try await setup.count("SELECT extract(epoch FROM expires_at)::bigint AS n FROM subscriptions WHERE id = \(renewing)")
            let done = try await runFleetCommand(extend + ["\(renewing)", "--yes"], environment: environment)
            #expect(done.status == 0 && done.output.contains("extended to ") && done.output.contains("its check is queued"), "\(done.output)")
            #expect(try await setup.count("""
                SELECT count(*) AS n FROM renewal_extensions WHERE subscription_id = \(renewing) AND state = 'extended' AND days = 7
                """) == 1)
            #expect(try await setup.count("SELECT count(*) AS n FROM audit_log WHERE action = 'subscriptions.extend'") == 1)

            let refused = try await runFleetCommand(extend + ["\(expired)", "--yes"], environment: environment)
            #expect(refused.status == 1 && refused.output.contains("not extended: it has expired"), "\(refused.output)")

            _ = try await setup.work()
            let after = try await setup.count("SELECT extract(epoch FROM expires_at)::bigint AS n FROM subscriptions WHERE id = \(renewing)")
            #expect(after == before + 7 * 86_400, "the check saw the later expiry")
            #expect(try await setup.count("""
                SELECT count(*) AS n FROM events WHERE subscription_id = \(renewing) AND type = 'renewal_extended'
                """) == 1)
        }
    }

    @Test func everyActiveSubscriberIsExtendedInOneRequestAndEachCheckedAfter() async throws {
        try await FleetSetup.withServerAPIKey(receipts: 40) { setup, environment in
            _ = try await setup.work()
            let extend = ["subscriptions", "extend", "--all-active", "--product", Self.product, "--days", "3", "--reason", "other"]
            let eligible = try await setup.count("""
                SELECT count(*) AS n FROM subscriptions WHERE product_id = '\(Self.product)' AND status = 'active'
                    AND environment = 'Production' AND NOT is_trial AND ownership IS DISTINCT FROM 'FAMILY_SHARED'
                """)
            #expect(eligible > 0)

            let preview = try await runFleetCommand(extend, environment: environment)
            #expect(preview.status == 0 && preview.output.contains(": \(eligible) eligible"), "\(preview.output)")
            #expect(preview.output.contains("Add --yes to ask Apple."), "\(preview.output)")

            let done = try await runFleetCommand(extend + ["--poll", "1", "--yes"], environment: environment)
            #expect(done.status == 0 && done.output.contains("Apple extended "), "\(done.output)")
            #expect(try await setup.count("""
                SELECT count(*) AS n FROM renewal_extensions WHERE product_id = '\(Self.product)' AND state = 'extended'
                """) == eligible)
            #expect(try await setup.count("""
                SELECT count(*) AS n FROM audit_log WHERE action = 'subscriptions.extend-all' AND details->>'succeeded' IS NOT NULL
                """) == 1)

            _ = try await setup.work()
            #expect(try await setup.count("SELECT count(*) AS n FROM events WHERE type = 'renewal_extended'") == eligible,
                    "each eligible subscriber's check saw its later expiry")
        }
    }

    @Test func extendRefusesBadArgumentsAndAMissingKeyBeforeAskingAnything() async throws {
        try await TestDatabase.with { database in
            try await LiveSimulator.with { simulator in
                let setup = try FleetSetup(database: database, simulator: simulator, nowMs: FleetEndToEndTests.nowMs, receipts: 1)
                func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
                    try await runFleetCommand(["subscriptions", "extend"] + arguments, environment: setup.environment)
                }
                let tooLong = try await run(["1", "--days", "91", "--reason", "other"])
                #expect(tooLong.status != 0 && tooLong.output.contains("--days must be 1 to 90"), "\(tooLong.output)")
                let reason = try await run(["1", "--days", "3", "--reason", "outage"])
                #expect(reason.status != 0 && reason.output.contains("--reason must be one of undeclared,"), "\(reason.output)")
                let both = try await run(["1", "--all-active", "--product", Self.product, "--days", "3", "--reason", "other"])
                #expect(both.status != 0 && both.output.contains("name no subscription"), "\(both.output)")
                let keyless = try await run(["1", "--days", "3", "--reason", "other"])
                #expect(keyless.status != 0 && keyless.output.contains("through the App Store Server API: configure its key"),
                        "\(keyless.output)")
            }
        }
    }
}
