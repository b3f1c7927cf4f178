import AppStore
import Foundation
import Testing

/// The real verifyReceipt bodies in Fixtures/ (see Fixtures/SOURCES.md for where each comes from).
enum Fixture: String, CaseIterable, Sendable {
    case excludeOld = "receipt_verifier__test__fixtures__vcr_cassettes__exclude_old_transactions__prod_status0"
    case excludeOldFalse = "receipt_verifier__test__fixtures__vcr_cassettes__exclude_old_transactions_false__prod_status0"
    case productionSaysSandbox = "receipt_verifier__test__fixtures__vcr_cassettes__auto_renewable_receipt__1_prod_21007"
    case sandbox = "receipt_verifier__test__fixtures__vcr_cassettes__auto_renewable_receipt__2_sandbox_status0"
    case invalidReceipt = "receipt_verifier__test__fixtures__vcr_cassettes__invalid_receipt__prod_21002"
    case sandboxSaysProduction = "receipt_verifier__test__fixtures__vcr_cassettes__production_receipt_to_sandbox__sandbox_21008"
    case monzaCancellation = "monza__spec__cancellation_response"
    case veniceExpiredIOS6 = "venice__spec__fixtures__receipt_expired_cancelled"
    case malformedWithException = "itunes-receipt__spec__fake_json__invalid"
    case offline = "itunes-receipt__spec__fake_json__offline"

    func bytes() throws -> Data {
        let url = try #require(Bundle.module.url(forResource: rawValue, withExtension: "json", subdirectory: "Fixtures"))
        return try Data(contentsOf: url)
    }

    func response() throws -> VerifyReceiptResponse {
        try VerifyReceiptResponse(body: bytes(), httpStatus: 200)
    }
}

/// An instant from milliseconds since 1970, as Apple writes them.
func ms(_ milliseconds: Int64) -> Instant {
    guard let instant = Instant(millisecondsSince1970: milliseconds) else { fatalError("test instant out of range") }
    return instant
}

/// A UTC instant from "2024-02-01T00:00:00.000Z".
func utc(_ iso8601: String) -> Instant {
    guard let instant = Instant(iso8601: iso8601) else { fatalError("bad test time \(iso8601)") }
    return instant
}
