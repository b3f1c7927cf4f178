import AppStore
import Foundation
import Testing

/// A subscription is judged at the moment Apple answered (`receipt.request_date_ms`), not when
/// the fleet reads the answer: sandbox periods last minutes, and an answer can wait seconds in a
/// worker's batch while a period ends.
@Suite struct JudgementTimeTests {
    typealias S = Scenario
    let january = Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))

    @Test func aPeriodThatEndsWhileTheAnswerTravelsWasStillPaidWhenAppleAnswered() throws {
        let answered = ms(S.day(2, 1).millisecondsSince1970 - 2_000)
        let readAt = ms(S.day(2, 1).millisecondsSince1970 + 5_000)
        let analysis = try S.analyze(stored: nil, S.response([january], answeredAt: answered), at: readAt)
        #expect(analysis.state.status == .active)
        #expect(analysis.state.verifiedAt == answered, "stamped with Apple's moment, so truth and state agree")
    }

    @Test func aGraceThatEndsWhileTheAnswerTravelsIsStillGrace() throws {
        let graceEnds = S.day(2, 17)
        let failing = [Renewal(expirationIntent: 2, inBillingRetry: true, graceExpires: graceEnds)]
        let answered = ms(graceEnds.millisecondsSince1970 - 1_000)
        let analysis = try S.analyze(
            stored: nil, S.response([january], renewals: failing, answeredAt: answered), at: ms(graceEnds.millisecondsSince1970 + 4_000))
        #expect(analysis.state.status == .inGrace)
    }

    @Test func withoutARequestDateTheReadersClockDecides() throws {
        let readAt = ms(S.day(2, 1).millisecondsSince1970 + 5_000)
        let analysis = try S.analyze(stored: nil, S.response([january]), at: readAt)
        #expect(analysis.state.status == .expired)
        #expect(analysis.state.verifiedAt == readAt)
    }
}
