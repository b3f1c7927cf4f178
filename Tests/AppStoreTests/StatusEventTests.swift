import AppStore
import Foundation
import Testing

/// Events about the standing of a subscription: refunds, renewal preferences, billing, expiry,
/// permanent failure. Every `Scenario.analyze` also checks id stability and that nothing fires twice.
@Suite struct StatusEventTests {
    typealias S = Scenario
    let january = Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))
    let february = Entry(transactionID: "1002", purchased: S.day(2, 1), expires: S.day(3, 1))

    @Test func nothingChangedFiresNothing() throws {
        let stored = try S.stored([january, february], at: S.day(2, 10))
        let analysis = try S.analyze(stored: stored, S.response([january, february]), at: S.day(2, 11))
        #expect(analysis.events.isEmpty)
        #expect(analysis.state.verifiedAt == S.day(2, 11))
    }

    @Test func refundedWithItsReason() throws {
        let stored = try S.stored([january, february], at: S.day(2, 10))
        var refunded = february
        (refunded.cancelled, refunded.cancellationReason) = (S.day(2, 12), 1)
        let analysis = try S.analyze(stored: stored, S.response([january, refunded]), at: S.day(2, 13))
        #expect(analysis.events.map(\.type) == [.refunded])
        let event = try #require(analysis.events.first)
        #expect(event.occurredAt == S.day(2, 12))
        #expect(event["transaction_id"] == .string("1002"))
        #expect(event["cancellation_reason"] == .integer(1))
        #expect(event["cancellation_reason_meaning"] == .string("customer reported an actual or perceived issue within the app"))
        #expect(analysis.state.status == .refunded)
        #expect(analysis.state.cancellation == Cancellation(cancelledAt: S.day(2, 12), reason: 1))
    }

    @Test func aRefundOfAnEarlierMonthIsAnnouncedToo() throws {
        let stored = try S.stored([january, february], at: S.day(2, 10))
        var refunded = january
        (refunded.cancelled, refunded.cancellationReason) = (S.day(2, 11), 0)
        let analysis = try S.analyze(stored: stored, S.response([refunded, february]), at: S.day(2, 13))
        #expect(analysis.events.map(\.type) == [.refunded])
        #expect(analysis.events.first?["transaction_id"] == .string("1001"))
        #expect(analysis.state.status == .active)
    }

    @Test func autoRenewDisabledThenEnabledThenDisabledAgain() throws {
        let stored = try S.stored([january], at: S.day(1, 10))
        let off = try S.analyze(stored: stored, S.response([january], renewals: [Renewal(autoRenew: false)]), at: S.day(1, 15))
        #expect(off.events.map(\.type) == [.autoRenewDisabled])
        #expect(off.events.first?["auto_renew"] == .bool(false))
        #expect(off.events.first?["effective_at"] == .string("2024-02-01T00:00:00.000Z"))
        #expect(off.events.first?.occurredAt == S.day(1, 15), "Apple gives no date: the verification's")

        let on = try S.analyze(stored: off.state, S.response([january]), at: S.day(1, 20))
        #expect(on.events.map(\.type) == [.autoRenewEnabled])

        let offAgain = try S.analyze(
            stored: on.state, S.response([january], renewals: [Renewal(autoRenew: false)]), at: S.day(1, 25))
        #expect(offAgain.events.map(\.type) == [.autoRenewDisabled])
        #expect(Set([off, on, offAgain].compactMap(\.events.first?.id)).count == 3, "each switch is its own occurrence")
    }

    @Test func planChangeScheduled() throws {
        let stored = try S.stored([january], at: S.day(1, 10))
        let analysis = try S.analyze(
            stored: stored, S.response([january], renewals: [Renewal(autoRenewProductID: S.basic)]), at: S.day(1, 15))
        #expect(analysis.events.map(\.type) == [.planChangeScheduled])
        let event = try #require(analysis.events.first)
        #expect(event["product_id"] == .string(S.pro))
        #expect(event["auto_renew_product_id"] == .string(S.basic))
        #expect(event["kind"] == .string("downgrade"))
        #expect(event["effective_at"] == .string("2024-02-01T00:00:00.000Z"))
        #expect(analysis.state.autoRenewProductID == S.basic)
    }

    @Test func billingRetryStarted() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        let failing = [Renewal(expirationIntent: 2, inBillingRetry: true)]
        let analysis = try S.analyze(stored: stored, S.response([january], renewals: failing), at: S.day(2, 3))
        #expect(analysis.events.map(\.type) == [.billingRetryStarted])
        #expect(analysis.events.first?.occurredAt == S.day(2, 1))
        #expect(analysis.events.first?["expiration_intent"] == .integer(2))
        #expect(analysis.state.status == .inBillingRetry)
    }

    @Test func gracePeriodStarted() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        let failing = [Renewal(expirationIntent: 2, inBillingRetry: true, graceExpires: S.day(2, 17))]
        let analysis = try S.analyze(stored: stored, S.response([january], renewals: failing), at: S.day(2, 3))
        #expect(analysis.events.map(\.type) == [.billingRetryStarted, .gracePeriodStarted])
        #expect(analysis.events.last?["grace_period_expires_at"] == .string("2024-02-17T00:00:00.000Z"))
        #expect(analysis.state.status == .inGrace)
        #expect(analysis.state.gracePeriodExpiresAt == S.day(2, 17))

        // When the grace period ends Apple keeps retrying: access ends, but no new failure.
        let afterGrace = try S.analyze(stored: analysis.state, S.response([january], renewals: failing), at: S.day(2, 18))
        #expect(afterGrace.state.status == .inBillingRetry)
        #expect(afterGrace.events.map(\.type) == [.gracePeriodEnded])
        #expect(afterGrace.events.first?.occurredAt == S.day(2, 17))
        #expect(afterGrace.events.first?["status"] == .string("in_billing_retry"))

        // Or Apple gives up, and the subscription expires.
        let gaveUp = [Renewal(autoRenew: false, expirationIntent: 2, inBillingRetry: false, graceExpires: S.day(2, 17))]
        let expired = try S.analyze(stored: analysis.state, S.response([january], renewals: gaveUp), at: S.day(2, 18))
        #expect(expired.events.map(\.type) == [.expired, .gracePeriodEnded, .autoRenewDisabled], "by Apple's dates")
    }

    @Test func billingRecovered() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        let retrying = try S.analyze(
            stored: stored, S.response([january], renewals: [Renewal(expirationIntent: 2, inBillingRetry: true)]),
            at: S.day(2, 3)
        ).state
        let recovered = Entry(transactionID: "1002", purchased: S.day(2, 5), expires: S.day(3, 5))
        let analysis = try S.analyze(stored: retrying, S.response([january, recovered]), at: S.day(2, 6))
        #expect(analysis.events.map(\.type) == [.renewed, .billingRecovered])
        #expect(analysis.events.last?["previous_status"] == .string("in_billing_retry"))
        #expect(analysis.events.last?.occurredAt == S.day(2, 5))
        #expect(analysis.state.status == .active)
    }

    @Test func expiredWithTheIntentAndItsMeaning() throws {
        let stored = try S.stored([january], renewals: [Renewal(autoRenew: false)], at: S.day(1, 15))
        let analysis = try S.analyze(
            stored: stored, S.response([january], renewals: [Renewal(autoRenew: false, expirationIntent: 1)]),
            at: S.day(2, 3))
        #expect(analysis.events.map(\.type) == [.expired])
        let event = try #require(analysis.events.first)
        #expect(event.occurredAt == S.day(2, 1))
        #expect(event["expiration_intent"] == .integer(1))
        #expect(event["expiration_reason"] == .string("customer cancelled"))
        #expect(analysis.state.status == .expired)
        #expect(analysis.state.expirationIntent == 1)
    }

    @Test func verificationFailedFiresOnceWhenTheSubscriptionBecomesInvalid() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        let failure = SubscriptionAnalyzer.permanentFailure(
            stored: stored, originalTransactionID: S.subscription, reason: "21010: account deleted", status: 21010,
            now: S.day(1, 20).date)
        #expect(failure.state.status == .invalid)
        #expect(failure.state.productID == S.pro, "what was known is kept")
        #expect(failure.state.verifiedAt == S.day(1, 20))
        #expect(failure.events.map(\.type) == [.verificationFailed])
        #expect(failure.events.first?["status"] == .integer(21010))
        #expect(failure.events.first?["reason"] == .string("21010: account deleted"))
        #expect(failure.events.first?["previous_status"] == .string("active"))

        let later = SubscriptionAnalyzer.permanentFailure(
            stored: stored, originalTransactionID: S.subscription, reason: "21010: account deleted", status: 21010,
            now: S.day(1, 21).date)
        #expect(later.events.map(\.id) == failure.events.map(\.id))
        let repeated = SubscriptionAnalyzer.permanentFailure(
            stored: failure.state, originalTransactionID: S.subscription, reason: "again", status: 21010, now: S.day(1, 22).date)
        #expect(repeated.events.isEmpty)

        let unseen = SubscriptionAnalyzer.permanentFailure(
            stored: nil, originalTransactionID: "77", reason: "HTTP 413", status: nil, now: S.day(1, 20).date)
        var invalid = SubscriptionState(originalTransactionID: "77", status: .invalid, verifiedAt: S.day(1, 20))
        invalid.invalidSince = S.day(1, 20)
        #expect(unseen.state == invalid)
        #expect(repeated.state.invalidSince == failure.state.invalidSince, "invalid since the first failure")
        #expect(unseen.events.map(\.type) == [.verificationFailed])
        #expect(unseen.events.first?["status"] == .null)
    }

    @Test func severalSubscriptionGroupsInOneReceipt() throws {
        let storage = Entry(
            transactionID: "3001", originalTransactionID: "3000", productID: "com.example.storage",
            purchased: S.day(1, 3), expires: S.day(2, 3))
        let storageRenewal = Renewal(originalTransactionID: "3000", productID: "com.example.storage",
                                     autoRenewProductID: "com.example.storage", autoRenew: false)
        let response = try S.response([january, storage], renewals: [storageRenewal, Renewal()])
        let pro = try S.analyze(stored: nil, response, at: S.day(1, 10))
        #expect(pro.otherOriginalTransactionIDs == ["3000"])
        #expect(pro.transactions.map(\.transactionID) == ["1001"])
        #expect(pro.state.autoRenew == true, "matched by original_transaction_id, not by position")
        #expect(pro.state.productID == S.pro)

        let other = try SubscriptionAnalyzer.analyze(
            stored: nil, response: response, originalTransactionID: "3000", now: S.day(1, 10).date)
        #expect(other.state.autoRenew == false)
        #expect(other.state.expiresAt == S.day(2, 3))
        #expect(other.otherOriginalTransactionIDs == [S.subscription])

        // The other group refunding and switching off changes nothing for this one.
        var refundedStorage = storage
        refundedStorage.cancelled = S.day(1, 12)
        let after = try S.analyze(stored: pro.state, S.response([january, refundedStorage]), at: S.day(1, 13))
        #expect(after.events.isEmpty)
    }

    @Test func theStoredReceiptIsReplacedOnlyByANewOne() throws {
        let stored = try S.stored([january], at: S.day(1, 10))
        #expect(stored.latestReceipt == ReceiptData(base64: "UkVDRUlQVA=="))
        let without = try S.analyze(stored: stored, S.response([january], receipt: nil), at: S.day(1, 11))
        #expect(without.state.latestReceipt == stored.latestReceipt)
        let newer = try S.analyze(stored: stored, S.response([january], receipt: "TkVXRVI="), at: S.day(1, 11))
        #expect(newer.state.latestReceipt == ReceiptData(base64: "TkVXRVI="))
    }
}
