import AppStore
import Foundation
import Testing

private func decode(_ json: String, httpStatus: Int = 200) throws -> VerifyReceiptResponse {
    try VerifyReceiptResponse(body: Array(json.utf8), httpStatus: httpStatus)
}

private func decodingError(_ body: String, httpStatus: Int) -> ResponseDecodingError? {
    do {
        _ = try VerifyReceiptResponse(body: Array(body.utf8), httpStatus: httpStatus)
        return nil
    } catch {
        return error
    }
}

/// The quirks of real verifyReceipt bodies, one at a time.
@Suite struct WireToleranceTests {
    @Test(arguments: [#""21007""#, "21007", "21007.0", #"" 21007 ""#])
    func statusMayBeAStringOrANumber(_ status: String) throws {
        #expect(try decode(#"{"status":\#(status)}"#).status == 21007)
    }

    @Test func aBodyThatIsNotJSONIsATypedErrorWithTheStartOfTheBody() throws {
        let head = "<html>\n<head><title>503 Service Unavailable</title></head>\n"
        let page = head + String(repeating: "x", count: 400)
        let error = try #require(decodingError(page, httpStatus: 503))
        #expect(error.problem == .notJSON)
        #expect(error.httpStatus == 503)
        #expect(error.bodyPrefix.hasPrefix(#"<html>\n<head><title>503 Service Unavailable</title>"#))
        #expect(!error.bodyPrefix.contains("\n"), "control characters are escaped")
        #expect(error.bodyPrefix.filter { $0 == "x" }.count == 200 - head.utf8.count, "only the first 200 bytes are kept")
        #expect(error.description.contains("HTTP 503"))
        #expect(error.description.contains("503 Service Unavailable"))
    }

    @Test func jsonThatIsNotAnObjectOrHasNoStatusIsATypedError() throws {
        #expect(decodingError("[1,2]", httpStatus: 200)?.problem == .notAnObject)
        #expect(decodingError(#""ok""#, httpStatus: 200)?.problem == .notAnObject)
        #expect(decodingError(#"{"environment":"Sandbox"}"#, httpStatus: 502)?.problem == .noStatus)
        #expect(decodingError(#"{"status":true}"#, httpStatus: 200)?.problem == .noStatus)
        #expect(decodingError(#"{"status":"ok"}"#, httpStatus: 200)?.problem == .noStatus)
        #expect(decodingError("", httpStatus: 500)?.problem == .notJSON)
        #expect(decodingError(#"{"status":0"#, httpStatus: 200)?.problem == .notJSON)
    }

    @Test(arguments: [
        (#""1""#, true), ("1", true), ("true", true), (#""true""#, true), (#""TRUE""#, true),
        (#""0""#, false), ("0", false), ("false", false), (#""false""#, false),
        (#""yes""#, nil), ("2", nil), ("null", nil), ("[]", nil), ("{}", nil),
    ] as [(String, Bool?)])
    func flagsAcceptEverySpellingAndNothingElse(_ spelling: String, _ expected: Bool?) throws {
        let response = try decode("""
            {"status":21100,"is-retryable":\(spelling),"pending_renewal_info":[
             {"original_transaction_id":"1","auto_renew_status":\(spelling),"is_in_billing_retry_period":\(spelling)}]}
            """)
        #expect(response.isRetryable == expected)
        #expect(response.pendingRenewalInfo.first?.autoRenewStatus == expected)
        #expect(response.pendingRenewalInfo.first?.isInBillingRetryPeriod == expected)
    }

    @Test func isRetryableIsReadUnderBothDocumentedNames() throws {
        #expect(try decode(#"{"status":21101,"is_retryable":true}"#).isRetryable == true)
        #expect(try decode(#"{"status":21101,"is-retryable":"0"}"#).isRetryable == false)
        #expect(try decode(#"{"status":21101}"#).isRetryable == nil)
    }

    @Test func idsAndCountsMayBeNumbers() throws {
        let entry = try #require(decode("""
            {"status":0,"latest_receipt_info":[{"transaction_id":1000000218147651,"original_transaction_id":1000000218147500,
             "web_order_line_item_id":1000000032727764,"quantity":1,"cancellation_reason":1}]}
            """).latestReceiptInfo.first)
        #expect(entry.transactionID == "1000000218147651")
        #expect(entry.originalTransactionID == "1000000218147500")
        #expect(entry.webOrderLineItemID == "1000000032727764")
        #expect(entry.quantity == 1)
        #expect(entry.cancellationReason == 1)
    }

    @Test func millisecondDatesComeFirstAndFormattedDatesAreTheFallback() throws {
        let entries = try decode("""
            {"status":0,"latest_receipt_info":[
             {"transaction_id":"a","original_transaction_id":"o","purchase_date_ms":1489195343000,
              "purchase_date":"2001-01-01 00:00:00 Etc/GMT"},
             {"transaction_id":"b","original_transaction_id":"o","purchase_date":"2017-03-11 01:22:23 Etc/GMT",
              "expires_date":"1491870143000","cancellation_date_pst":"2017-03-10 17:22:23 America/Los_Angeles"},
             {"transaction_id":"c","original_transaction_id":"o","expires_date_formatted":"2017-04-11 00:22:23 Etc/GMT",
              "purchase_date_ms":"not a date","purchase_date":"2017-02-30 00:00:00 Etc/GMT"}]}
            """).latestReceiptInfo
        #expect(entries.map(\.purchaseDate) == [ms(1_489_195_343_000), ms(1_489_195_343_000), nil])
        #expect(entries.map(\.expiresDate) == [nil, ms(1_491_870_143_000), ms(1_491_870_143_000)])
        #expect(entries[1].cancellationDate == nil, "_pst fields are never read")
    }

    @Test func repeatedTransactionsAreMergedIntoOne() throws {
        let response = try decode("""
            {"status":0,"latest_receipt_info":[
             {"transaction_id":"t1","original_transaction_id":"o","product_id":"p"},
             {"transaction_id":"t2","original_transaction_id":"o","product_id":"p"},
             {"transaction_id":"t1","original_transaction_id":"o","product_id":"other","expires_date_ms":"1491870143000"}],
             "receipt":{"in_app":[{"transaction_id":"t1","original_transaction_id":"o","cancellation_date_ms":"1491870000000"}]},
             "pending_renewal_info":[{"original_transaction_id":"o","auto_renew_status":"1"},
                                     {"original_transaction_id":"o","expiration_intent":"3"}]}
            """)
        #expect(response.latestReceiptInfo.map(\.transactionID) == ["t1", "t2"])
        let merged = response.latestReceiptInfo[0]
        #expect(merged.productID == "p", "the first occurrence wins where both have a value")
        #expect(merged.expiresDate == ms(1_491_870_143_000), "a repeat fills what the first lacks")
        #expect(response.allTransactions.count == 2)
        #expect(response.allTransactions[0].cancellationDate == ms(1_491_870_000_000))
        #expect(response.pendingRenewalInfo.count == 1)
        #expect(response.pendingRenewalInfo[0].autoRenewStatus == true)
        #expect(response.pendingRenewalInfo[0].expirationIntent == 3)
    }

    @Test func missingFieldsAreNilAndUnknownFieldsAreIgnored() throws {
        let response = try decode("""
            {"status":0,"brand_new_field":{"deep":[1,2,3]},"latest_receipt_info":[
             {"transaction_id":"t","original_transaction_id":"o","unexpected":true},
             {"original_transaction_id":"o","product_id":"no id: dropped"},
             {"transaction_id":"","original_transaction_id":"o"}, 42, "text", null]}
            """)
        #expect(response.environment == nil)
        #expect(response.latestReceipt == nil)
        #expect(response.receipt == nil)
        #expect(response.latestReceiptInfo.count == 1)
        let entry = response.latestReceiptInfo[0]
        #expect(entry.productID == nil && entry.purchaseDate == nil && entry.expiresDate == nil)
        #expect(entry.isTrialPeriod == nil && entry.isUpgraded == nil && entry.ownershipType == nil)
    }

    @Test func newerFieldsAreRead() throws {
        let entry = try #require(decode("""
            {"status":0,"environment":"sandbox","latest_receipt_info":[{"transaction_id":"t","original_transaction_id":"o",
             "in_app_ownership_type":"FAMILY_SHARED","is_upgraded":"true","offer_code_ref_name":"SPRING",
             "promotional_offer_id":"winback","subscription_group_identifier":"20500000"}],
             "pending_renewal_info":[{"original_transaction_id":"o","grace_period_expires_date_ms":"1497140543000",
             "price_consent_status":"1"}]}
            """).latestReceiptInfo.first)
        #expect(entry.ownershipType == .familyShared)
        #expect(entry.isUpgraded == true)
        #expect(entry.offerCodeRefName == "SPRING")
        #expect(entry.promotionalOfferID == "winback")
        #expect(entry.subscriptionGroupIdentifier == "20500000")
        let response = try decode(#"{"status":0,"environment":"Sandbox","pending_renewal_info":{"original_transaction_id":"o","grace_period_expires_date":"2017-06-11 00:22:23 Etc/GMT"}}"#)
        #expect(response.environment == .sandbox)
        #expect(response.pendingRenewalInfo.first?.gracePeriodExpiresDate == ms(1_497_140_543_000))
    }

    @Test func iOS6ObjectsReadLikeOneElementArrays() throws {
        let response = try decode("""
            {"status":0,"latest_receipt":"TUlJ","latest_receipt_info":{"transaction_id":"t2","original_transaction_id":"o",
             "expires_date":"1491870143000","product_id":"p"},
             "receipt":{"transaction_id":"t1","original_transaction_id":"o","bid":"com.example","product_id":"p"},
             "is_in_billing_retry_period":"1","auto_renew_status":1}
            """)
        #expect(response.latestReceiptInfo.map(\.transactionID) == ["t2"])
        #expect(response.receipt?.inApp.map(\.transactionID) == ["t1"])
        #expect(response.receipt?.bundleID == "com.example")
        #expect(response.pendingRenewalInfo.count == 1)
        #expect(response.pendingRenewalInfo[0].originalTransactionID == "o")
        #expect(response.pendingRenewalInfo[0].isInBillingRetryPeriod == true)
        #expect(response.pendingRenewalInfo[0].autoRenewStatus == true)
        #expect(response.latestReceipt?.base64 == "TUlJ")
    }

    @Test func theReceiptNeverPrints() throws {
        let response = try decode(#"{"status":0,"latest_receipt":"SECRETSECRETSECRET"}"#)
        for text in [String(describing: response), String(reflecting: response), "\(response.latestReceipt!)"] {
            #expect(!text.contains("SECRET"))
        }
        var dumped = ""
        dump(response, to: &dumped)
        #expect(!dumped.contains("SECRET"))
        #expect(dumped.contains("redacted"))
    }
}
