import AppStore
import Foundation
import Testing

/// The App Store Server API's signed payloads read into the receipt model: Apple's own example
/// payloads field by field, and hand-built lifecycles that must analyse exactly as the same facts
/// told by verifyReceipt do (same state, same events), so the two backends announce the same.
@Suite struct ServerAPIPayloadTests {
    static func fixture(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return try Data(contentsOf: url)
    }

    static func applesExample(bundleID: String = "com.example") throws -> VerifyReceiptResponse {
        try VerifyReceiptResponse(
            signedTransactions: [fixture("app-store-server-library__signedTransaction")],
            renewals: [fixture("app-store-server-library__signedRenewalInfo")], environment: .sandbox, bundleID: bundleID,
            showsEveryRefund: false)
    }

    @Test func applesSignedTransactionReadsAsVerifyReceiptWouldSayIt() throws {
        let response = try Self.applesExample()
        let transaction = try #require(response.latestReceiptInfo.first)
        #expect(response.latestReceiptInfo.count == 1)
        #expect(transaction.transactionID == "23456")
        #expect(transaction.originalTransactionID == "12345")
        #expect(transaction.productID == "com.example.product")
        #expect(transaction.quantity == 1)
        #expect(transaction.purchaseDate == ms(1_698_148_900_000))
        #expect(transaction.originalPurchaseDate == ms(1_698_148_800_000))
        #expect(transaction.expiresDate == ms(1_698_149_000_000))
        #expect(transaction.cancellationDate == ms(1_698_148_950_000))
        #expect(transaction.cancellationReason == 1)
        #expect(transaction.isUpgraded == true)
        #expect(transaction.isTrialPeriod == false)  // an introductory offer paid as you go
        #expect(transaction.isInIntroOfferPeriod == true)
        #expect(transaction.ownershipType == .purchased)
        #expect(transaction.webOrderLineItemID == "34343")
        #expect(transaction.subscriptionGroupIdentifier == "55555")
        #expect(transaction.promotionalOfferID == nil && transaction.offerCodeRefName == nil)
        #expect(response.status == 0)
        #expect(response.environment == .sandbox)
        #expect(response.receipt?.bundleID == "com.example")
        #expect(response.receipt?.requestDate == ms(1_698_148_900_000), "the latest signedDate of the payloads")
    }

    @Test func applesSignedRenewalInfoReadsAsPendingRenewalInfo() throws {
        let renewal = try #require(try Self.applesExample().pendingRenewalInfo.first)
        #expect(renewal.originalTransactionID == "12345")
        #expect(renewal.productID == "com.example.product")
        #expect(renewal.autoRenewProductID == "com.example.product.2")
        #expect(renewal.autoRenewStatus == true)
        #expect(renewal.expirationIntent == 1)
        #expect(renewal.isInBillingRetryPeriod == true)
        #expect(renewal.gracePeriodExpiresDate == ms(1_698_148_900_000))
        #expect(renewal.priceConsentStatus == 0)
        #expect(renewal.promotionalOfferID == "abc.123")
        #expect(renewal.offerCodeRefName == nil)
    }

    /// Apple signs for every app on the account: a valid signature proves Apple, not this app.
    @Test func aPayloadSignedForAnotherAppIsRefused() throws {
        #expect(throws: SignedPayloadError.otherApp(bundleID: "com.example")) { try Self.applesExample(bundleID: "com.other") }
        #expect(throws: SignedPayloadError.self) {
            try VerifyReceiptResponse(
                signedTransactions: [Data("[1]".utf8)], renewals: [], environment: nil, bundleID: "com.example", showsEveryRefund: false)
        }
    }

    @Test func aStatusesAnswerListsEveryGroupsLatestTransaction() throws {
        let body = """
            {"environment":"Sandbox","bundleId":"com.example","appAppleId":5454545,"data":[
             {"subscriptionGroupIdentifier":"sub_group_one","lastTransactions":[
              {"status":1,"originalTransactionId":"3749183","signedTransactionInfo":"a.b.c","signedRenewalInfo":"d.e.f"},
              {"status":5,"originalTransactionId":"5314314134","signedTransactionInfo":"g.h.i"}]},
             {"subscriptionGroupIdentifier":"sub_group_two","lastTransactions":[
              {"status":2,"originalTransactionId":"3413453","signedTransactionInfo":"j.k.l","signedRenewalInfo":"m.n.o"},
              {"status":3,"originalTransactionId":"1"}]}]}
            """
        let statuses = try SubscriptionStatusesResponse(body: Array(body.utf8), httpStatus: 200)
        #expect(statuses.environment == .sandbox)
        #expect(statuses.bundleID == "com.example")
        #expect(statuses.lastTransactions.map(\.originalTransactionID) == ["3749183", "5314314134", "3413453"])
        #expect(statuses.lastTransactions.map(\.status) == [1, 5, 2])
        #expect(statuses.lastTransactions.map(\.signedRenewalInfo) == ["d.e.f", nil, "m.n.o"])
        #expect(throws: ResponseDecodingError.self) { try SubscriptionStatusesResponse(body: Array("<html>".utf8), httpStatus: 502) }
    }

    @Test func anErrorAnswerNamesItsCode() {
        let notFound = ServerAPIErrorBody(body: Array(#"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#.utf8))
        #expect(notFound?.code == ServerAPIErrorBody.transactionIDNotFound)
        #expect(notFound?.message == "Transaction id not found.")
        #expect(ServerAPIErrorBody(body: Array("<html>Bad Gateway</html>".utf8)) == nil)
    }

    // MARK: the same facts, told by either backend

    typealias S = Scenario

    /// The analysis of a lifecycle told by verifyReceipt and by the Server API, from the same stored state.
    static func bothWays(
        _ entries: [Entry], renewals: [Renewal] = [Renewal()], stored: SubscriptionState? = nil, at now: Instant
    ) throws -> (receipt: Analysis, signed: Analysis) {
        let analyse = { (response: VerifyReceiptResponse) throws -> Analysis in
            try SubscriptionAnalyzer.analyze(
                stored: stored, response: response, originalTransactionID: S.subscription, now: now.date, products: S.catalog,
                announcingPurchasesWithin: 7 * 86_400)  // a registration's window: first purchases are announced
        }
        // No `latest_receipt`: the Server API has no receipt to give back.
        let receipt = try analyse(S.response(entries, renewals: renewals, receipt: nil, answeredAt: now))
        let signed = try analyse(VerifyReceiptResponse(
            signedTransactions: entries.map { try $0.signed(signedAt: now) }, renewals: renewals.map { try $0.signed(signedAt: now) },
            environment: .production, bundleID: "com.example", showsEveryRefund: true))
        return (receipt, signed)
    }

    @Test(arguments: [
        "a first purchase", "a trial", "a renewal", "a refund", "an upgrade", "auto-renew off", "billing retry in grace",
        "an offer code",
    ])
    func aLifecycleAnalysesTheSameFromEitherBackend(_ name: String) throws {
        let first = Entry(transactionID: "1", purchased: S.day(1, 1), expires: S.day(2, 1))
        let renewal = Entry(transactionID: "2", purchased: S.day(2, 1), expires: S.day(3, 1))
        let stored = try S.stored([first], at: S.day(1, 2))
        let (entries, renewals, before, now): ([Entry], [Renewal], SubscriptionState?, Instant) = switch name {
        case "a first purchase": ([first], [Renewal()], nil, S.day(1, 2))
        case "a trial": ([Entry(transactionID: "1", purchased: S.day(1, 1), expires: S.day(1, 8), isTrial: true)], [Renewal()], nil, S.day(1, 2))
        case "a renewal": ([first, renewal], [Renewal()], stored, S.day(2, 2))
        case "a refund":
            ([Entry(transactionID: "1", purchased: S.day(1, 1), expires: S.day(2, 1), cancelled: S.day(1, 10), cancellationReason: 0)],
             [Renewal(autoRenew: false)], stored, S.day(1, 11))
        case "an upgrade":
            ([Entry(transactionID: "1", purchased: S.day(1, 1), expires: S.day(2, 1), isUpgraded: true, cancelled: S.day(1, 15)),
              Entry(transactionID: "2", productID: S.pro, purchased: S.day(1, 15), expires: S.day(2, 15))],
             [Renewal()], try S.stored([Entry(transactionID: "1", productID: S.basic, purchased: S.day(1, 1), expires: S.day(2, 1))],
                                       at: S.day(1, 2)), S.day(1, 16))
        case "auto-renew off": ([first], [Renewal(autoRenew: false, expirationIntent: 1)], stored, S.day(1, 20))
        case "billing retry in grace":
            ([first], [Renewal(expirationIntent: 2, inBillingRetry: true, graceExpires: S.day(2, 7))], stored, S.day(2, 2))
        default: ([Entry(transactionID: "1", purchased: S.day(1, 1), expires: S.day(2, 1), offerCodeRefName: "SPRING")], [Renewal()], nil, S.day(1, 2))
        }
        let (receipt, signed) = try Self.bothWays(entries, renewals: renewals, stored: before, at: now)
        #expect(!receipt.events.isEmpty, "the scenario must announce something")
        #expect(signed.events == receipt.events)
        #expect(signed.state == receipt.state)
        #expect(signed.transactions == receipt.transactions)
    }
}

extension Entry {
    /// This transaction as the Server API signs it (`JWSTransactionDecodedPayload`).
    func signed(signedAt: Instant) throws -> Data {
        var fields: [String: Any] = [
            "transactionId": transactionID, "originalTransactionId": originalTransactionID, "bundleId": "com.example",
            "productId": productID, "quantity": 1, "purchaseDate": purchased.millisecondsSince1970,
            "originalPurchaseDate": Scenario.chainStart.millisecondsSince1970, "expiresDate": expires.millisecondsSince1970,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": ownership, "environment": "Production",
            "signedDate": signedAt.millisecondsSince1970,
        ]
        if isTrial {
            fields["offerType"] = 1
            fields["offerDiscountType"] = "FREE_TRIAL"
        }
        if let offerCodeRefName {
            fields["offerType"] = 3
            fields["offerIdentifier"] = offerCodeRefName
        }
        fields["subscriptionGroupIdentifier"] = groupID
        if isUpgraded { fields["isUpgraded"] = true }
        fields["revocationDate"] = cancelled?.millisecondsSince1970
        fields["revocationReason"] = cancellationReason
        return try JSONSerialization.data(withJSONObject: fields)
    }
}

extension Renewal {
    /// These renewal plans as the Server API signs them (`JWSRenewalInfoDecodedPayload`).
    func signed(signedAt: Instant) throws -> Data {
        var fields: [String: Any] = [
            "originalTransactionId": originalTransactionID, "productId": productID, "autoRenewProductId": autoRenewProductID,
            "autoRenewStatus": autoRenew ? 1 : 0, "isInBillingRetryPeriod": inBillingRetry, "environment": "Production",
            "signedDate": signedAt.millisecondsSince1970,
        ]
        fields["expirationIntent"] = expirationIntent
        fields["gracePeriodExpiresDate"] = graceExpires?.millisecondsSince1970
        fields["priceIncreaseStatus"] = priceConsentStatus
        return try JSONSerialization.data(withJSONObject: fields)
    }
}
