import AppStore
import Foundation
import Testing

/// Events about new paid periods: renewed, resubscribed, plan_changed, trial_converted.
/// Every `Scenario.analyze` also checks that ids ignore `now` and that nothing fires twice.
@Suite struct PeriodEventTests {
    typealias S = Scenario
    let january = Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))
    let february = Entry(transactionID: "1002", purchased: S.day(2, 1), expires: S.day(3, 1))
    let march = Entry(transactionID: "1003", purchased: S.day(3, 1), expires: S.day(4, 1))

    @Test func firstSightIsABaselineWithoutEvents() throws {
        var refunded = february
        refunded.cancelled = S.day(2, 5)
        let analysis = try S.analyze(
            stored: nil, S.response([january, refunded], renewals: [Renewal(autoRenew: false)]), at: S.day(2, 10))
        #expect(analysis.events.isEmpty)
        #expect(analysis.state.status == .refunded)
        #expect(analysis.state.chainStartedAt == S.chainStart)
    }

    @Test func renewed() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        let analysis = try S.analyze(stored: stored, S.response([january, february]), at: S.day(2, 10))
        #expect(analysis.events.map(\.type) == [.renewed])
        let event = try #require(analysis.events.first)
        #expect(event.originalTransactionID == S.subscription)
        #expect(event.occurredAt == S.day(2, 1))
        #expect(event["transaction_id"] == .string("1002"))
        #expect(event["previous_transaction_id"] == .string("1001"))
        #expect(event["expires_at"] == .string("2024-03-01T00:00:00.000Z"))
        #expect(analysis.state.status == .active)
        #expect(analysis.state.latestTransactionID == "1002")
        #expect(analysis.state.chainStartedAt == S.chainStart)
    }

    @Test func everyRenewalSinceTheLastCheckFiresOnceInOrder() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        let full = try S.analyze(stored: stored, S.response([march, january, february]), at: S.day(3, 10))
        #expect(full.events.map(\.type) == [.renewed, .renewed])
        #expect(full.events.map { $0["transaction_id"] } == [.string("1002"), .string("1003")])
        // With exclude-old-transactions Apple lists only the latest; it still renews the stored one.
        let trimmed = try S.analyze(stored: stored, S.response([march]), at: S.day(3, 10))
        #expect(trimmed.events.map(\.type) == [.renewed])
        #expect(trimmed.events.first?["previous_transaction_id"] == .string("1001"))
        #expect(trimmed.events.first?.id == full.events.last?.id, "one renewal, one id, whatever the view")
    }

    @Test func transactionIDsSayNothingAboutOrder() throws {
        var (first, second, third) = (january, february, march)
        (first.transactionID, second.transactionID, third.transactionID) = ("9003", "9001", "9002")
        let analysis = try S.analyze(stored: nil, S.response([second, third, first]), at: S.day(3, 10))
        #expect(analysis.state.latestTransactionID == "9002")
        #expect(analysis.state.expiresAt == S.day(4, 1))
        #expect(analysis.transactions.map(\.transactionID) == ["9003", "9001", "9002"])

        let stored = try S.stored([first], at: S.day(1, 15))
        let renewals = try S.analyze(stored: stored, S.response([third, second, first]), at: S.day(3, 10))
        #expect(renewals.events.map { $0["transaction_id"] } == [.string("9001"), .string("9002")])
    }

    @Test func resubscribedAfterALapseStartsANewChain() throws {
        let lapsed = try S.stored([january], renewals: [Renewal(autoRenew: false, expirationIntent: 1)], at: S.day(2, 3))
        #expect(lapsed.status == .expired)
        let comeback = Entry(transactionID: "2001", purchased: S.day(3, 10), expires: S.day(4, 10))
        let analysis = try S.analyze(stored: lapsed, S.response([january, comeback]), at: S.day(3, 15))
        // Coming back also switches renewal back on.
        #expect(analysis.events.map(\.type) == [.resubscribed, .autoRenewEnabled])
        let event = try #require(analysis.events.first)
        #expect(event.occurredAt == S.day(3, 10))
        #expect(event["chain_started_at"] == .string("2024-03-10T00:00:00.000Z"))
        #expect(event["previous_expires_at"] == .string("2024-02-01T00:00:00.000Z"))
        #expect(event["previous_status"] == .string("expired"))
        #expect(analysis.state.chainStartedAt == S.day(3, 10))
        #expect(analysis.state.status == .active)
    }

    @Test func aLateRenewalOfAnExpiredStateIsNotAResubscription() throws {
        let lapsed = try S.stored([january], at: S.day(2, 1, hour: 6))
        #expect(lapsed.status == .expired)
        let analysis = try S.analyze(stored: lapsed, S.response([january, february]), at: S.day(2, 2))
        #expect(analysis.events.map(\.type) == [.renewed])
        #expect(analysis.state.chainStartedAt == S.chainStart)
    }

    @Test func upgradeIsAPlanChangeNotARefund() throws {
        // A yearly basic plan upgraded mid-year to monthly pro: the superseded year ends later than
        // the new month, yet the month is what the customer has now.
        let yearly = Entry(transactionID: "1001", productID: S.basic, purchased: S.day(1, 1), expires: utc("2025-01-01T00:00:00.000Z"))
        let stored = try S.stored([yearly], renewals: [Renewal(productID: S.basic, autoRenewProductID: S.basic)], at: S.day(1, 15))
        var superseded = yearly
        (superseded.isUpgraded, superseded.cancelled, superseded.cancellationReason) = (true, S.day(1, 20), 0)
        let upgrade = Entry(transactionID: "1002", productID: S.pro, purchased: S.day(1, 20), expires: S.day(2, 20))
        let analysis = try S.analyze(stored: stored, S.response([superseded, upgrade]), at: S.day(1, 21))
        #expect(analysis.events.map(\.type) == [.planChanged])
        let event = try #require(analysis.events.first)
        #expect(event["kind"] == .string("upgrade"))
        #expect(event["kind_basis"] == .string("is_upgraded"))
        #expect(event["from_product_id"] == .string(S.basic))
        #expect(event["to_product_id"] == .string(S.pro))
        #expect(analysis.state.status == .active)
        #expect(analysis.state.productID == S.pro)
        #expect(analysis.state.cancellation == nil)
        #expect(analysis.transactions.first?.isUpgraded == true)
    }

    @Test func downgradeAtRenewalIsARenewalAndAPlanChange() throws {
        let stored = try S.stored([january], renewals: [Renewal(autoRenewProductID: S.basic)], at: S.day(1, 15))
        var basicFebruary = february
        basicFebruary.productID = S.basic
        let response = try S.response([january, basicFebruary], renewals: [Renewal(productID: S.basic, autoRenewProductID: S.basic)])
        let analysis = try S.analyze(stored: stored, response, at: S.day(2, 10))
        #expect(analysis.events.map(\.type) == [.renewed, .planChanged])
        #expect(analysis.events.last?["kind"] == .string("downgrade"))
        #expect(analysis.events.last?["kind_basis"] == .string("catalog"))

        // Without levels the direction is unknown: reported as a crossgrade, and said so.
        let unknown = try S.analyze(stored: stored, response, at: S.day(2, 10), products: .none)
        #expect(unknown.events.last?["kind"] == .string("crossgrade"))
        #expect(unknown.events.last?["kind_basis"] == .string("unknown"))
        #expect(unknown.events.last?.id == analysis.events.last?.id, "the id names the change, not its reading")
    }

    @Test func trialConverted() throws {
        let trial = Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(1, 8), isTrial: true)
        let stored = try S.stored([trial], at: S.day(1, 3))
        #expect(stored.isTrial == true)
        let paid = Entry(transactionID: "1002", purchased: S.day(1, 8), expires: S.day(2, 8))
        let analysis = try S.analyze(stored: stored, S.response([trial, paid]), at: S.day(1, 10))
        #expect(analysis.events.map(\.type) == [.renewed, .trialConverted])
        #expect(analysis.events.last?["trial_transaction_id"] == .string("1001"))
        #expect(analysis.events.last?["transaction_id"] == .string("1002"))
        #expect(analysis.state.isTrial == false)
    }
}
