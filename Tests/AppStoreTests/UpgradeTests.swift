import AppStore
import Foundation
import Testing

/// An upgrade cancels the old transaction at the moment it buys the new one. That cancellation is
/// never a refund, whether or not Apple marks the old transaction `is_upgraded` (it documents the
/// flag only in `latest_receipt_info`), and the replaced transaction is never a plan's new home.
@Suite struct UpgradeTests {
    typealias S = Scenario
    static let yearly = "com.example.basic.yearly"
    let basicYear = Entry(
        transactionID: "1001", productID: UpgradeTests.yearly, purchased: S.day(1, 1), expires: utc("2025-01-01T00:00:00.000Z"))

    /// With exclude-old-transactions the replaced year reaches us only through `in_app`, unflagged.
    @Test func anUnflaggedCancellationAtTheMomentOfAnotherPurchaseIsAnUpgrade() throws {
        let stored = try S.stored(
            [basicYear], renewals: [Renewal(productID: Self.yearly, autoRenewProductID: Self.yearly)], at: S.day(1, 15))
        var cancelledYear = basicYear
        cancelledYear.cancelled = S.day(1, 20, hour: 0)
        let proMonth = Entry(transactionID: "1002", productID: S.pro, purchased: utc("2024-01-20T00:00:30.000Z"), expires: S.day(2, 20))
        let response = try S.response([proMonth], inApp: [cancelledYear], renewals: [Renewal()])
        let analysis = try S.analyze(stored: stored, response, at: S.day(1, 21))
        #expect(analysis.state.status == .active)
        #expect(analysis.state.productID == S.pro)
        #expect(analysis.state.cancellation == nil)
        #expect(analysis.events.map(\.type) == [.planChanged])
        #expect(analysis.events.first?["kind"] == .string("upgrade"))
        #expect(analysis.events.first?["kind_basis"] == .string("superseded"))
        #expect(analysis.events.first?["from_product_id"] == .string(Self.yearly))
        #expect(analysis.transactions.first { $0.transactionID == "1001" }?.isUpgraded == true)
    }

    @Test func aCancellationWithNoPurchaseBesideItIsARefund() throws {
        let stored = try S.stored(
            [basicYear], renewals: [Renewal(productID: Self.yearly, autoRenewProductID: Self.yearly)], at: S.day(1, 15))
        var refundedYear = basicYear
        refundedYear.cancelled = S.day(1, 20)
        // Bought two minutes after the cancellation: a new purchase, not the upgrade's other half.
        let later = Entry(transactionID: "1002", productID: S.pro, purchased: utc("2024-01-20T00:02:00.000Z"), expires: S.day(2, 20))
        let analysis = try S.analyze(stored: stored, S.response([later], inApp: [refundedYear]), at: S.day(1, 21))
        #expect(analysis.events.map(\.type).contains(.refunded))
        #expect(analysis.transactions.first { $0.transactionID == "1001" }?.isUpgraded == nil)
    }

    /// The shape of a recorded production answer: the monthly plan renewed into a yearly one, and
    /// a monthly renewal Apple listed after the year is flagged `is_upgraded` and cancelled the
    /// next morning. The year is the plan: one change into it, none back out.
    @Test func aTransactionMarkedUpgradedIsNeverThePlanChangesTarget() throws {
        let monthly = "com.example.pro.monthly", annual = "com.example.pro.yearly"
        let firstMonth = Entry(
            transactionID: "2001", productID: monthly, purchased: utc("2020-05-09T17:28:00.000Z"),
            expires: utc("2020-06-09T17:28:00.000Z"))
        let year = Entry(
            transactionID: "2002", productID: annual, purchased: utc("2020-06-09T17:28:00.000Z"),
            expires: utc("2021-06-09T17:28:00.000Z"))
        var replacedMonth = Entry(
            transactionID: "2003", productID: monthly, purchased: utc("2020-06-09T20:55:00.000Z"),
            expires: utc("2020-07-09T20:55:00.000Z"))
        (replacedMonth.isUpgraded, replacedMonth.cancelled) = (true, utc("2020-06-10T08:12:00.000Z"))
        let renewal = Renewal(productID: annual, autoRenewProductID: annual)
        let stored = try S.stored(
            [firstMonth], renewals: [Renewal(productID: monthly, autoRenewProductID: monthly)],
            at: utc("2020-05-20T00:00:00.000Z"))
        let analysis = try S.analyze(
            stored: stored, S.response([year, replacedMonth, firstMonth], renewals: [renewal]),
            at: utc("2020-06-11T00:00:00.000Z"))
        #expect(analysis.state.productID == annual)
        #expect(analysis.state.status == .active)
        let changes = analysis.events.filter { $0.type == .planChanged }
        #expect(changes.map { $0["to_product_id"] } == [.string(annual)])
        #expect(!analysis.events.contains { $0.type == .refunded })
    }
}
