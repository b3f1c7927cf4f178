import AppStoreSimulator
import Foundation
import Testing

@Suite("Lifecycles unfold as the clock moves")
struct LifecycleTests {
    @Test("a renewal appears after advancing the clock a month")
    func renewal() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let before = try await verifyJSON(client, receipt(.renewing))
            let lastExpiry = try #require(before.latestEntries.newest?.number("expires_date_ms"))
            try await control(client, "/control/clock", #"{"advance_seconds": 2678400}"#)  // 31 days
            let after = try await verifyJSON(client, receipt(.renewing))
            #expect(after.latestEntries.count == before.latestEntries.count + 1)
            let renewal = try #require(after.latestEntries.first)
            #expect(renewal.number("purchase_date_ms") == lastExpiry)
            #expect(renewal.number("expires_date_ms") == lastExpiry + 30 * day)
            #expect(!before.latestEntries.contains { $0.text("transaction_id") == renewal.text("transaction_id") })
            #expect(after.renewals.first?.text("auto_renew_status") == "1")
            #expect(after.renewals.first?["expiration_intent"] == nil)
        }
    }

    @Test("a refund appears with its cancellation date and reason, and ends renewals")
    func refund() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let answers = try await scan(client, receipt(.refunded), from: anchorMs - 40 * day, through: anchorMs + 120 * day, every: day)
            let refundedAt = try #require(answers.firstIndex { $0.json.latestEntries.contains { $0["cancellation_date"] != nil } })
            #expect(refundedAt > 0, "not refunded yet at the start")
            for (now, json) in answers[refundedAt...] {
                let cancelled = try #require(json.latestEntries.first { $0["cancellation_date_ms"] != nil })
                #expect(cancelled["cancellation_date_pst"] is String)
                #expect(["0", "1"].contains(cancelled.text("cancellation_reason")))
                let cancelledMs = try #require(cancelled.number("cancellation_date_ms"))
                #expect(cancelledMs <= now && cancelledMs >= cancelled.number("purchase_date_ms")!)
                #expect(json.renewals.first?.text("auto_renew_status") == "0")
                #expect(json.latestEntries.count == answers[refundedAt].json.latestEntries.count, "no renewal after a refund")
            }
        }
    }

    @Test("auto-renew off: still active until the period ends, then expired with intent 1")
    func autoRenewOff() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let answers = try await scan(client, receipt(.autoRenewOff), from: anchorMs - 60 * day, through: anchorMs + 90 * day, every: day)
            let switchedOff = try #require(answers.firstIndex { $0.json.renewals[0].text("auto_renew_status") == "0" })
            #expect(switchedOff > 0)
            let (offNow, offJSON) = answers[switchedOff]
            #expect(offJSON.latestEntries.newest!.number("expires_date_ms")! > offNow, "still paid for when switched off")
            #expect(offJSON.renewals[0]["expiration_intent"] == nil)
            let (_, last) = answers.last!
            #expect(last.renewals[0].text("expiration_intent") == "1")
            #expect(last.latestEntries.count == offJSON.latestEntries.count)
        }
    }

    @Test("billing retry with grace, then recovery with a new transaction")
    func billingRecovered() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let answers = try await scan(client, receipt(.billingRecovered), from: anchorMs - 35 * day, through: anchorMs + 100 * day, every: day)
            let inGrace = try #require(answers.firstIndex { answer in
                let renewal = answer.json.renewals[0]
                return renewal.text("is_in_billing_retry_period") == "1" && renewal.number("grace_period_expires_date_ms")! > answer.now
                    && answer.json.latestEntries.newest!.number("expires_date_ms")! <= answer.now
            })
            let failedExpiry = answers[inGrace].json.latestEntries.newest!.number("expires_date_ms")!
            #expect(answers[inGrace].json.renewals[0].number("grace_period_expires_date_ms") == failedExpiry + 16 * day)
            #expect(answers[inGrace].json.renewals[0].text("expiration_intent") == "2")
            let recovered = try #require(answers[inGrace...].first { $0.json.latestEntries.newest!.number("expires_date_ms")! > $0.now })
            let renewal = recovered.json.latestEntries.newest!
            #expect(renewal.number("purchase_date_ms")! > failedExpiry + 16 * day, "recovered after the grace period")
            #expect(recovered.json.renewals[0]["is_in_billing_retry_period"] == nil)
            #expect(recovered.json.renewals[0]["grace_period_expires_date"] == nil)
        }
    }

    @Test("billing retry without grace gives up: expired with intent 2")
    func billingExpired() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let answers = try await scan(client, receipt(.billingExpired), from: anchorMs - 30 * day, through: anchorMs + 120 * day, every: 2 * day)
            let retrying = try #require(answers.first { $0.json.renewals[0].text("is_in_billing_retry_period") == "1" })
            #expect(retrying.json.renewals[0]["grace_period_expires_date_ms"] == nil)
            #expect(retrying.json.renewals[0].text("auto_renew_status") == "1")
            let last = answers.last!.json.renewals[0]
            #expect(last.text("is_in_billing_retry_period") == "0")
            #expect(last.text("expiration_intent") == "2")
            #expect(last.text("auto_renew_status") == "0")
        }
    }

    @Test("an upgrade marks the old entry and starts the new product at once")
    func upgrade() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let json = try await scan(client, receipt(.upgrade), from: anchorMs + 40 * day, through: anchorMs + 40 * day, every: day)[0].json
            let old = try #require(json.latestEntries.first { $0.text("is_upgraded") == "true" })
            let upgradedAt = try #require(old.number("cancellation_date_ms"))
            #expect(old["cancellation_reason"] == nil, "an upgrade is not a refund")
            let new = try #require(json.latestEntries.first { $0.number("purchase_date_ms") == upgradedAt })
            #expect(new.text("product_id") == "com.receiptfleet.demo.premium.monthly")
            #expect(old.text("product_id") == "com.receiptfleet.demo.pro.monthly")
            #expect(new.text("original_transaction_id") == old.text("original_transaction_id"))
            #expect(json.renewals[0].text("product_id") == "com.receiptfleet.demo.premium.monthly")
        }
    }

    @Test("a plan change is scheduled (auto_renew_product_id differs) and happens at the renewal")
    func planChange() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let answers = try await scan(client, receipt(.planChange), from: anchorMs - 40 * day, through: anchorMs + 80 * day, every: day)
            let scheduled = try #require(answers.firstIndex { $0.json.renewals[0].text("auto_renew_product_id") != $0.json.renewals[0].text("product_id") })
            let target = try #require(answers[scheduled].json.renewals[0].text("auto_renew_product_id"))
            let paidUntil = answers[scheduled].json.latestEntries.newest!.number("expires_date_ms")!
            let changed = try #require(answers[scheduled...].first { $0.json.latestEntries.newest!.text("product_id") == target })
            let first = try #require(changed.json.latestEntries.first { $0.text("product_id") == target && $0.number("purchase_date_ms") == paidUntil })
            #expect(first.text("original_transaction_id") == changed.json.renewals[0].text("original_transaction_id"))
            #expect(changed.json.renewals[0].text("product_id") == target)
        }
    }

    @Test("a free trial converts to paid periods")
    func trial() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let json = try await scan(client, receipt(.trialConversion), from: anchorMs + 60 * day, through: anchorMs + 60 * day, every: day)[0].json
            let entries = json.latestEntries.sorted { $0.number("purchase_date_ms")! < $1.number("purchase_date_ms")! }
            #expect(entries.first?.text("is_trial_period") == "true")
            #expect(entries.first.map { $0.number("expires_date_ms")! - $0.number("purchase_date_ms")! } == 7 * day)
            #expect(entries.count > 1 && entries.dropFirst().allSatisfy { $0.text("is_trial_period") == "false" })
        }
    }

    @Test("Family Sharing entries say FAMILY_SHARED")
    func familyShared() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let json = try await verifyJSON(client, receipt(.familyShared))
            #expect(!json.latestEntries.isEmpty && json.latestEntries.allSatisfy { $0.text("in_app_ownership_type") == "FAMILY_SHARED" })
        }
    }

    @Test("a re-subscription after a lapse reuses the original_transaction_id")
    func resubscribed() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let answers = try await scan(client, receipt(.resubscribed), from: anchorMs - 90 * day, through: anchorMs + 60 * day, every: day)
            let lapsed = try #require(answers.firstIndex { $0.json.renewals[0].text("expiration_intent") == "1" })
            let lapsedJSON = answers[lapsed].json
            let lapseStart = lapsedJSON.latestEntries.newest!.number("expires_date_ms")!
            let back = try #require(answers[lapsed...].first { $0.json.latestEntries.newest!.number("expires_date_ms")! > $0.now })
            let first = try #require(back.json.latestEntries.filter { $0.number("purchase_date_ms")! > lapseStart }
                .min { $0.number("purchase_date_ms")! < $1.number("purchase_date_ms")! })
            #expect(first.text("original_transaction_id") == lapsedJSON.renewals[0].text("original_transaction_id"))
            #expect(first.number("original_purchase_date_ms") == lapsedJSON.latestEntries[0].number("original_purchase_date_ms"))
            #expect(back.json.renewals[0]["expiration_intent"] == nil)
            #expect(back.json.renewals[0].text("auto_renew_status") == "1")
        }
    }

    @Test("a receipt with two subscription groups lists both")
    func twoGroups() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let json = try await verifyJSON(client, receipt(.twoGroups))
            #expect(Set(json.renewals.compactMap { $0.text("original_transaction_id") }).count == 2)
            #expect(Set(json.latestEntries.compactMap { $0.text("subscription_group_identifier") }).count == 2)
            let newestOnly = try await verifyJSON(client, receipt(.twoGroups), excludeOld: true)
            #expect(newestOnly.latestEntries.count == 2, "exclude-old-transactions keeps one entry per subscription")
            #expect(json.latestEntries.count > 2)
        }
    }
}
