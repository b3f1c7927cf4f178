import AppStore
import Foundation
import Testing

/// Analysing real responses gives the state a careful reader expects.
@Suite struct FixtureAnalysisTests {
    @Test func monzaCancellationIsARefundWithItsReason() throws {
        let analysis = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Fixture.monzaCancellation.response(),
            originalTransactionID: "1000000218147500", now: utc("2016-06-18T00:00:00.000Z").date)
        let state = analysis.state
        #expect(state.status == .refunded)
        // Latest by expiry is the in_app renewal, though latest_receipt_info lists only the trial.
        #expect(state.latestTransactionID == "1000000218147651")
        #expect(state.expiresAt == ms(1_466_127_448_000))
        #expect(state.cancellation == Cancellation(cancelledAt: ms(1_466_127_848_000), reason: 0))
        #expect(state.isTrial == false)
        #expect(state.environment == .sandbox)
        #expect(state.latestReceipt == ReceiptData(base64: "base 64 string"))
        #expect(analysis.transactions.map(\.transactionID) == ["1000000218147500", "1000000218147651"])
        #expect(analysis.transactions.allSatisfy { $0.cancelledAt == ms(1_466_127_848_000) && $0.cancellationReason == 0 })
        #expect(analysis.events.isEmpty, "first sight is a baseline")
        #expect(analysis.otherOriginalTransactionIDs.isEmpty)
    }

    @Test func veniceIOS6ExpiredReceiptIsExpiredByTheCustomer() throws {
        let analysis = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Fixture.veniceExpiredIOS6.response(),
            originalTransactionID: "140000527258824", now: utc("2019-03-01T00:00:00.000Z").date)
        let state = analysis.state
        #expect(state.status == .expired)
        #expect(state.expirationIntent == 1)
        #expect(state.autoRenew == false)
        #expect(state.autoRenewProductID == "com.foo.product1")
        #expect(state.productID == "com.foo.product1")
        #expect(state.expiresAt == ms(1_550_386_188_000))
        #expect(state.purchasedAt == ms(1_549_781_388_000))
        #expect(state.isTrial == true)
        #expect(state.isIntroOffer == false)
        #expect(state.environment == nil)
        #expect(state.chainStartedAt == ms(1_549_781_388_000))
        #expect(analysis.transactions.count == 1)
    }

    @Test func excludeOldTransactionsIsExpiredByABillingErrorWhenAppleAnswered() throws {
        // Recorded on 2018-10-05, more than a year after the last period ended; the clock of the
        // reader (here a day in 2017, when the period still ran) does not matter.
        let analysis = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Fixture.excludeOld.response(), originalTransactionID: "110000267199044",
            now: utc("2017-06-01T00:00:00.000Z").date)
        let state = analysis.state
        #expect(state.status == .expired)
        #expect(state.autoRenew == false)
        #expect(state.expirationIntent == 2)
        #expect(state.latestTransactionID == "110000284493242")
        #expect(state.productID == "com.sumiapp.GridDiary.pro_subscription")
        #expect(state.purchasedAt == ms(1_494_462_143_000))
        #expect(state.expiresAt == ms(1_497_140_543_000))
        #expect(state.environment == .production)
        #expect(state.chainStartedAt == ms(1_489_195_344_000))
        #expect(state.verifiedAt == ms(1_538_738_660_205), "stamped with the receipt's request_date_ms")
        // receipt.in_app still lists the two older months; they are this subscription's too.
        #expect(analysis.transactions.map(\.transactionID) == ["110000267199044", "110000275907901", "110000284493242"])
    }

    @Test func fullHistoryAndExcludeOldAgreeOnTheState() throws {
        let now = utc("2019-01-01T00:00:00.000Z").date
        let full = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Fixture.excludeOldFalse.response(), originalTransactionID: "110000267199044", now: now)
        let trimmed = try SubscriptionAnalyzer.analyze(
            stored: nil, response: Fixture.excludeOld.response(), originalTransactionID: "110000267199044", now: now)
        var fullState = full.state
        // The two were recorded two seconds apart, and each carries its own receipt.
        fullState.latestReceipt = trimmed.state.latestReceipt
        fullState.verifiedAt = trimmed.state.verifiedAt
        fullState.refundsReadAt = trimmed.state.refundsReadAt  // a receipt shows every refund: read when answered
        #expect(fullState == trimmed.state)
        #expect(full.transactions.map(\.transactionID) == trimmed.transactions.map(\.transactionID))
    }

    @Test func sandboxReceiptPicksTheLatestExpiryNotTheLastListed() throws {
        let response = try Fixture.sandbox.response()
        let analysis = try SubscriptionAnalyzer.analyze(
            stored: nil, response: response, originalTransactionID: "1000000248850692",
            now: utc("2016-11-09T07:32:00.000Z").date)
        let state = analysis.state
        #expect(state.status == .expired, "judged on 2018-10-05, when Apple answered")
        #expect(state.expirationIntent == nil)
        #expect(state.latestTransactionID == "1000000248916093")
        #expect(state.purchasedAt == ms(1_478_676_592_000))
        #expect(state.expiresAt == ms(1_478_676_892_000))
        #expect(state.productID == "com.sumiapp.GridDiary.pro.subscription")
        #expect(state.autoRenew == nil, "the response has no pending_renewal_info")
        #expect(state.environment == .sandbox)
        #expect(state.chainStartedAt == ms(1_478_663_143_000))
        #expect(analysis.transactions.count == 14)
        #expect(analysis.transactions.first?.transactionID == "1000000248850692", "oldest purchase first")
        #expect(analysis.transactions.first?.isTrial == true)
        // The non-renewing purchase on the same receipt is someone else's business.
        #expect(analysis.otherOriginalTransactionIDs == ["1000000197013632"])
    }

    @Test func statusesWithoutAReceiptCannotBeAnalysed() throws {
        #expect(throws: AnalysisError.notAValidReceipt(status: 21007)) {
            try SubscriptionAnalyzer.analyze(
                stored: nil, response: Fixture.productionSaysSandbox.response(), originalTransactionID: "1",
                now: Date(timeIntervalSince1970: 0))
        }
    }

    @Test func aSubscriptionTheReceiptDoesNotHoldIsAnError() throws {
        #expect(throws: AnalysisError.subscriptionNotInReceipt(
            originalTransactionID: "42", found: ["1000000197013632", "1000000248850692"])
        ) {
            try SubscriptionAnalyzer.analyze(
                stored: nil, response: Fixture.sandbox.response(), originalTransactionID: "42",
                now: Date(timeIntervalSince1970: 0))
        }
    }
}
