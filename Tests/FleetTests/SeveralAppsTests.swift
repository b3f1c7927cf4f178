import AppStore
import AppStoreSimulator
import Fleet
import Foundation
import Ledger
import TestSupport
import Testing

/// Two apps in one deployment, on one Apple account: the demo app's receipts go with the account's
/// shared secret, the journal's with an app-specific one. When Apple refuses the journal's secret,
/// the journal alone halts: the demo app's subscriptions are all verified, and none of the
/// journal's is touched; once its secret is fixed, `resume --app journal` finishes them.
@Suite struct SeveralAppsTests {
    static let journalBundleID = Catalog.bundleIDs[1]

    @Test func aWrongSecretHaltsOnlyItsAppAndTheOthersGoOn() async throws {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        var knobs = FaultKnobs(sharedSecret: "the-account-secret")
        knobs.appSharedSecrets = [Self.journalBundleID: "the-journal-secret"]
        try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: knobs, startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 60, secret: "the-account-secret")
                setup.settings.apps = try FleetSetup.twoApps(journalSecrets: [SharedSecret("a-stale-secret")])
                let journal = try await setup.addJournal(receipts: 30, nowMs: nowMs)
                let defaults = setup.subscriptions.count
                let scheduled = try await setup.load().enqueued
                #expect(scheduled == defaults + journal.count)

                let halted = try await setup.work(until: { status in
                    status.apps.first { $0.name == "journal" }?.haltedReason != nil
                        && status.apps.first { $0.name == "default" }?.subscriptions?["unverified"] == nil
                })
                let journalStatus = halted.apps.first { $0.name == "journal" }
                #expect(journalStatus?.haltedReason?.contains("21004") == true, "the journal halts for its secret")
                #expect(halted.queue.haltedReason == nil, "the fleet does not")
                #expect(halted.apps.first { $0.name == "default" }?.haltedReason == nil)
                #expect(try await setup.count("""
                    SELECT count(*) AS n FROM subscriptions WHERE app = 'default' AND last_verified_at IS NOT NULL
                    """) == defaults, "every subscription of the other app is verified")
                #expect(try await setup.groundTruthMismatches() == [])
                #expect(try await setup.count("""
                    SELECT count(*) AS n FROM subscriptions WHERE app = 'journal' AND (status <> 'unverified' OR last_verified_at IS NOT NULL)
                    """) == 0, "a wrong secret never touches a subscription")

                // The operator fixes the journal's secret and lifts its halt alone.
                setup.settings.apps = try FleetSetup.twoApps(journalSecrets: [SharedSecret("the-journal-secret")])
                let settings = setup.settings
                _ = try await onOwnThread { try resumeFleet(settings: settings, app: "journal") }
                let settled = try await setup.work()
                #expect(settled.isSettled && settled.queue.dead == 0, "the buried first ones were replayed")
                #expect(settled.apps.allSatisfy { $0.haltedReason == nil })
                #expect(try await setup.count("SELECT count(*) AS n FROM subscriptions WHERE last_verified_at IS NULL") == 0)
                let wrong = try await setup.journalMismatches(journal)
                #expect(wrong.isEmpty, "\(wrong.count) of the journal's subscriptions are not the truth: \(wrong.prefix(5))")
            }
        }
    }
}
