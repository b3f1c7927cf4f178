import AppStore
import Foundation
import Testing

/// Every real response decodes into what a careful reader of the JSON sees.
@Suite struct FixtureDecodingTests {
    @Test func everyFixtureDecodes() throws {
        for fixture in Fixture.allCases {
            _ = try fixture.response()
        }
    }

    @Test func productionWithExcludeOldTransactions() throws {
        let response = try Fixture.excludeOld.response()
        #expect(response.httpStatus == 200)
        #expect(response.status == 0)
        #expect(response.environment == .production)
        #expect(response.isRetryable == nil)
        #expect(response.latestReceipt?.base64.hasPrefix("MIIUCwYJKoZIhvcN") == true)

        let receipt = try #require(response.receipt)
        #expect(receipt.bundleID == "com.sumiapp.GridDiary")
        #expect(receipt.receiptType == "Production")
        #expect(receipt.creationDate == ms(1_499_757_277_000))
        #expect(receipt.requestDate == ms(1_538_738_660_205))
        #expect(receipt.inApp.map(\.transactionID) == ["110000267199044", "110000275907901", "110000284493242"])

        #expect(response.latestReceiptInfo.count == 1)
        #expect(response.latestExpiredReceiptInfo.isEmpty)
        let latest = try #require(response.latestReceiptInfo.first)
        #expect(latest.transactionID == "110000284493242")
        #expect(latest.originalTransactionID == "110000267199044")
        #expect(latest.productID == "com.sumiapp.GridDiary.pro_subscription")
        #expect(latest.quantity == 1)
        #expect(latest.purchaseDate == ms(1_494_462_143_000))
        #expect(latest.originalPurchaseDate == ms(1_489_195_344_000))
        #expect(latest.expiresDate == ms(1_497_140_543_000))
        #expect(latest.webOrderLineItemID == "110000051334759")
        #expect(latest.isTrialPeriod == false)
        #expect(latest.isInIntroOfferPeriod == false)
        #expect(latest.cancellationDate == nil)
        #expect(latest.isUpgraded == nil)
        #expect(latest.ownershipType == nil)

        #expect(response.pendingRenewalInfo.count == 1)
        let renewal = try #require(response.pendingRenewalInfo.first)
        #expect(renewal.originalTransactionID == "110000267199044")
        #expect(renewal.productID == "com.sumiapp.GridDiary.pro_subscription")
        #expect(renewal.autoRenewProductID == "com.sumiapp.GridDiary.pro_subscription")
        #expect(renewal.autoRenewStatus == false)
        #expect(renewal.expirationIntent == 2)
        #expect(renewal.isInBillingRetryPeriod == false)
        #expect(renewal.gracePeriodExpiresDate == nil)
    }

    @Test func productionWithFullHistory() throws {
        let response = try Fixture.excludeOldFalse.response()
        #expect(response.status == 0)
        #expect(response.environment == .production)
        #expect(response.latestReceiptInfo.map(\.transactionID) == ["110000267199044", "110000275907901", "110000284493242"])
        #expect(response.latestReceiptInfo.map(\.expiresDate) == [
            ms(1_491_870_143_000), ms(1_494_462_143_000), ms(1_497_140_543_000),
        ])
        #expect(Set(response.latestReceiptInfo.map(\.originalTransactionID)) == ["110000267199044"])
        #expect(response.receipt?.inApp.count == 3)
        #expect(response.receipt?.requestDate == ms(1_538_738_662_108))
        // The same three transactions in two lists are one set of transactions.
        #expect(response.allTransactions.count == 3)
        #expect(response.pendingRenewalInfo.first?.expirationIntent == 2)
    }

    @Test func productionAnswers21007ForASandboxReceipt() throws {
        let response = try Fixture.productionSaysSandbox.response()
        #expect(response.status == 21007)
        #expect(response.receipt == nil)
        #expect(response.allTransactions.isEmpty)
        #expect(StatusPolicy().action(for: VerificationOutcome(response), attempt: 1) == .retryOnSandbox)
    }

    @Test func sandboxRetryWithFifteenInAppEntries() throws {
        let response = try Fixture.sandbox.response()
        #expect(response.status == 0)
        #expect(response.environment == .sandbox)
        #expect(response.latestReceiptInfo.isEmpty)
        #expect(response.pendingRenewalInfo.isEmpty)
        #expect(response.latestReceipt?.base64.hasPrefix("MIIShgYJKoZIhvcN") == true)
        let receipt = try #require(response.receipt)
        #expect(receipt.receiptType == "ProductionSandbox")
        #expect(receipt.bundleID == "com.sumiapp.GridDiary")
        #expect(receipt.inApp.count == 15)

        let nonSubscription = receipt.inApp[0]
        #expect(nonSubscription.transactionID == "1000000197013632")
        #expect(nonSubscription.productID == "com.sumiapp.GridDiary.pro")
        #expect(nonSubscription.expiresDate == nil)

        // Listed last, bought first: the free trial that started the subscription.
        let trial = try #require(receipt.inApp.last)
        #expect(trial.transactionID == "1000000248850692")
        #expect(trial.isTrialPeriod == true)
        #expect(trial.purchaseDate == ms(1_478_663_142_000))
        #expect(trial.expiresDate == ms(1_478_663_322_000))
        #expect(receipt.inApp.filter { $0.originalTransactionID == "1000000248850692" }.count == 14)
    }

    @Test func recordedMalformedReceiptAnswers() throws {
        let recorded = try Fixture.invalidReceipt.response()
        #expect(recorded.status == 21002)
        #expect(recorded.exception == nil)

        let withException = try Fixture.malformedWithException.response()
        #expect(withException.status == 21002)
        #expect(withException.exception?.hasPrefix("java.lang.IllegalArgumentException: propertyListFromString") == true)
        #expect(withException.receipt == nil)
    }

    @Test func sandboxAnswers21008ForAProductionReceipt() throws {
        let response = try Fixture.sandboxSaysProduction.response()
        #expect(response.status == 21008)
        #expect(StatusPolicy().action(for: VerificationOutcome(response), attempt: 1) == .retryOnProduction)
    }

    @Test func appStoreOffline() throws {
        let response = try Fixture.offline.response()
        #expect(response.status == 21005)
        #expect(StatusPolicy().action(for: VerificationOutcome(response), attempt: 1) == .retryable(upstreamUnavailable: true))
    }

    @Test func monzaRefundedTransaction() throws {
        let response = try Fixture.monzaCancellation.response()
        #expect(response.status == 0)
        #expect(response.environment == .sandbox)
        #expect(response.latestReceipt?.base64 == "base 64 string")
        let latest = try #require(response.latestReceiptInfo.first)
        #expect(response.latestReceiptInfo.count == 1)
        #expect(latest.transactionID == "1000000218147500")
        #expect(latest.originalTransactionID == "1000000218147500")
        #expect(latest.isTrialPeriod == true)
        #expect(latest.purchaseDate == ms(1_466_126_848_000))
        #expect(latest.expiresDate == ms(1_466_127_148_000))
        #expect(latest.cancellationDate == ms(1_466_127_848_000))
        #expect(latest.cancellationReason == 0)
        #expect(latest.webOrderLineItemID == "1000000032727765")

        let inApp = try #require(response.receipt?.inApp.first)
        #expect(response.receipt?.inApp.count == 1)
        #expect(inApp.transactionID == "1000000218147651")
        #expect(inApp.originalTransactionID == "1000000218147500")
        #expect(inApp.isTrialPeriod == false)
        #expect(inApp.expiresDate == ms(1_466_127_448_000))
        #expect(inApp.cancellationReason == 0)
        #expect(response.pendingRenewalInfo.isEmpty)
    }

    @Test func veniceIOS6ExpiredReceipt() throws {
        let response = try Fixture.veniceExpiredIOS6.response()
        #expect(response.status == 21006)
        #expect(response.environment == nil)
        #expect(response.latestReceipt == nil)
        #expect(response.latestReceiptInfo.isEmpty)

        // iOS 6: `receipt` is the transaction itself, with `bid` for the bundle id.
        let receipt = try #require(response.receipt)
        #expect(receipt.bundleID == "com.foo.bar")
        #expect(receipt.receiptType == nil)
        #expect(receipt.inApp.map(\.transactionID) == ["140000527258824"])

        // `latest_expired_receipt_info` is an object, and its `expires_date` is milliseconds.
        let expired = try #require(response.latestExpiredReceiptInfo.first)
        #expect(response.latestExpiredReceiptInfo.count == 1)
        #expect(expired.originalTransactionID == "140000527258824")
        #expect(expired.productID == "com.foo.product1")
        #expect(expired.purchaseDate == ms(1_549_781_388_000))
        #expect(expired.expiresDate == ms(1_550_386_188_000))
        #expect(expired.isTrialPeriod == true)
        #expect(expired.isInIntroOfferPeriod == false)
        #expect(expired.webOrderLineItemID == "140000151774411")

        // The renewal fields at the top level become the subscription's pending renewal.
        let renewal = try #require(response.pendingRenewalInfo.first)
        #expect(response.pendingRenewalInfo.count == 1)
        #expect(renewal.originalTransactionID == "140000527258824")
        #expect(renewal.productID == "com.foo.product1")
        #expect(renewal.autoRenewStatus == false)
        #expect(renewal.autoRenewProductID == "com.foo.product1")
        #expect(renewal.expirationIntent == 1)
        #expect(renewal.isInBillingRetryPeriod == false)
        #expect(StatusPolicy().action(for: VerificationOutcome(response), attempt: 1) == .expiredButValid)
    }
}
