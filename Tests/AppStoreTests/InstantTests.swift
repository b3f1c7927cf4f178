import AppStore
import Foundation
import Testing

@Suite struct InstantTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_489_195_343_000, "2017-03-11T01:22:23.000Z"),
        (1_538_738_661_611, "2018-10-05T11:24:21.611Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func iso8601SpellingRoundTrips(_ millis: Int64, _ text: String) throws {
        let instant = ms(millis)
        #expect(instant.description == text)
        #expect(Instant(iso8601: text) == instant)
    }

    @Test func appleFormattedDatesReadInTheirTimeZone() {
        #expect(Instant(appleFormattedForTest: "2017-03-11 01:22:23 Etc/GMT") == ms(1_489_195_343_000))
        // The same moment in Apple's Pacific spelling, in winter (UTC-8) and in summer (UTC-7).
        #expect(Instant(appleFormattedForTest: "2017-03-10 17:22:23 America/Los_Angeles") == ms(1_489_195_343_000))
        #expect(Instant(appleFormattedForTest: "2017-06-10 17:22:23 America/Los_Angeles") == ms(1_497_140_543_000))
    }

    @Test(arguments: [
        "2017-02-29 00:00:00 Etc/GMT", "2017-13-01 00:00:00 Etc/GMT", "2017-01-01 24:00:00 Etc/GMT",
        "2017-01-01 00:00:00 Mars/Olympus", "2017-01-01 00:00:00", "", "9999999999-01-01 00:00:00 Etc/GMT",
    ])
    func impossibleFormattedDatesAreMissing(_ text: String) {
        #expect(Instant(appleFormattedForTest: text) == nil)
    }

    @Test func instantsOutsideTheSupportedYearsAreMissing() {
        #expect(Instant(millisecondsSince1970: -1) == nil)
        #expect(Instant(millisecondsSince1970: 253_402_300_800_000) == nil)
        #expect(Instant(iso8601: "2017-03-11T01:22:23Z") == Instant(iso8601: "2017-03-11T01:22:23.000Z"), "milliseconds may be left out")
        #expect(Instant(iso8601: "2017-03-11T01:22:23.5Z") == nil)
        #expect(Instant(iso8601: "2017-02-30T01:22:23.000Z") == nil)
    }

    @Test func datesRoundDownToTheMillisecondAndClamp() {
        #expect(Instant(Date(timeIntervalSince1970: 1_489_195_343.9999)) == ms(1_489_195_343_999))
        #expect(Instant(Date(timeIntervalSince1970: -5)) == ms(0))
        #expect(Instant(Date(timeIntervalSince1970: 1e15)) == ms(Instant.supportedRange.upperBound))
        #expect(ms(1_538_738_661_611).date.timeIntervalSince1970 == 1_538_738_661.611)
    }
}

extension Instant {
    /// Apple's formatted spelling, read the way the decoder reads `purchase_date`.
    init?(appleFormattedForTest text: String) {
        let body = #"{"status":0,"latest_receipt_info":[{"transaction_id":"t","original_transaction_id":"o","purchase_date":"\#(text)"}]}"#
        guard let response = try? VerifyReceiptResponse(body: Array(body.utf8), httpStatus: 200),
              let instant = response.latestReceiptInfo.first?.purchaseDate
        else { return nil }
        self = instant
    }
}
