import Foundation
import Ledger
import PostgresClient
import TestSupport
import Testing

/// `receiptfleet subscriptions forget` and `receiptfleet prune` as an operator runs them: forget
/// says what it would delete until told --yes, then deletes and is audited; prune applies the
/// retention settings and says what it deleted; config check shows them.
@Suite struct DataLifecycleCommandTests {
    @Test func forgetPreviewsThenDeletesAndIsAudited() async throws {
        try await Deployment.with(receipts: 3) { deployment in
            let environment = deployment.settings.processEnvironment.merging(["RECEIPTFLEET_METRICS_ADDRESS": "off"]) { $1 }
            func receiptfleet(_ arguments: String...) async throws -> (status: Int32, output: String) {
                try await runFleetCommand(arguments, environment: environment)
            }
            let database = deployment.database
            let ids = try await onOwnThread {
                let ledger = Ledger(try database.connect())
                let ids = try ledger.connection.query("SELECT id FROM subscriptions ORDER BY id LIMIT 2").map { try $0["id"].int64() ?? 0 }
                _ = try ledger.linkAccount("user-8812", to: ids)
                return ids
            }
            func left() async throws -> Int {
                try await onOwnThread { Int(try database.connect().query("SELECT count(*) AS n FROM subscriptions")[0]["n"].int64() ?? -1) }
            }
            let total = try await left()

            let preview = try await receiptfleet("subscriptions", "forget", "--account", "user-8812")
            #expect(preview.status == 0 && preview.output.contains("Would forget 2 subscription(s) (\(ids[0]), \(ids[1]))"), "\(preview.output)")
            #expect(try await left() == total, "nothing deleted without --yes")
            let forgot = try await receiptfleet("subscriptions", "forget", "--account", "user-8812", "--yes")
            #expect(forgot.status == 0 && forgot.output.contains("Forgot 2 subscription(s)"), "\(forgot.output)")
            #expect(try await left() == total - 2)
            let again = try await receiptfleet("subscriptions", "forget", "--account", "user-8812", "--yes")
            #expect(again.status == 0 && again.output.contains("Nothing to forget"), "\(again.output)")
            #expect(try await receiptfleet("subscriptions", "forget", "1", "--account", "x").status != 0, "one selector at a time")

            // With several apps, an account is one app's: the command needs to know which.
            let apps = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("apps") + ".json")
            try Data(#"{"default": {"bundle_ids": ["com.example.a"]}, "journal": {"bundle_ids": ["com.example.b"]}}"#.utf8).write(to: apps)
            defer { try? FileManager.default.removeItem(at: apps) }
            let severalApps = environment.merging(["RECEIPTFLEET_APPS_FILE": apps.path]) { $1 }
            let unnamed = try await runFleetCommand(["subscriptions", "forget", "--account", "user-8812"], environment: severalApps)
            #expect(unnamed.status != 0 && unnamed.output.contains("name the app with --app (default, journal)"), "\(unnamed.output)")
            let unknown = try await runFleetCommand(["subscriptions", "forget", "--account", "user-8812", "--app", "photos"], environment: severalApps)
            #expect(unknown.status != 0 && unknown.output.contains("No app is named 'photos'"), "\(unknown.output)")

            let audit = try await receiptfleet("audit", "--action", "subscriptions.forget", "--json")
            #expect(audit.output.contains(#""target":"account=user-8812 app=default""#) && audit.output.contains(#""subscriptions":"2""#),
                    "\(audit.output)")
        }
    }

    @Test func pruneAppliesTheRetentionSettings() async throws {
        try await Deployment.with(receipts: 1) { deployment in
            let database = deployment.database
            _ = try await onOwnThread {
                try database.connect().execute("""
                    INSERT INTO verifications (subscription_id, attempted_at, outcome)
                    SELECT id, now() - (d || ' days')::interval, 'verified' FROM subscriptions, unnest(ARRAY[40, 5]) AS d
                    """)
            }
            let environment = deployment.settings.processEnvironment.merging([
                "RECEIPTFLEET_METRICS_ADDRESS": "off", "RECEIPTFLEET_RETENTION_VERIFICATIONS_DAYS": "30",
                "RECEIPTFLEET_RETENTION_EVENTS_DAYS": "0",
            ]) { $1 }
            let subscriptions = try await onOwnThread { Int(try database.connect().query("SELECT count(*) AS n FROM subscriptions")[0]["n"].int64() ?? 0) }
            let pruned = try await runFleetCommand(["prune", "--batch-size", "100"], environment: environment)
            #expect(pruned.status == 0 && pruned.output.contains("Deleted \(subscriptions) verification attempt(s), 0 scheduler night(s) with their passes, 0 event(s)"), "\(pruned.output)")
            let kept = try await onOwnThread { Int(try database.connect().query("SELECT count(*) AS n FROM verifications")[0]["n"].int64() ?? 0) }
            #expect(kept == subscriptions, "the 5-day-old attempts stay")

            let check = try await runFleetCommand(["config", "check"], environment: environment)
            #expect(check.output.contains("retention-verifications-days  30.0") && check.output.contains("retention-events-days         0 (kept for ever)"),
                    "\(check.output)")
            let tooShort = try await runFleetCommand(
                ["config", "check"], environment: environment.merging(["RECEIPTFLEET_RETENTION_EVENTS_DAYS": "3"]) { $1 })
            #expect(tooShort.status != 0 && tooShort.output.contains("retention-events-days"), "shorter than the stream's 7 days: \(tooShort.output)")
        }
    }
}
