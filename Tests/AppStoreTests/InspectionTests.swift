import AppStore
import Foundation
import Testing

/// `receiptfleet inspect` is built on `Inspection`: every real response must give a report a
/// support engineer can trust.
@Suite struct InspectionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027: every fixture's subscription has ended

    @Test func aRefundIsReportedWithItsReason() throws {
        let report = try Inspection(body: Array(Fixture.monzaCancellation.bytes()), now: Self.now)
        #expect(report.status == 0)
        #expect(report.action == "valid")
        #expect(report.subscriptions.map(\.originalTransactionID) == ["1000000218147500"])
        #expect(report.subscriptions[0].state.status == .refunded)
        #expect(report.subscriptions[0].state.cancellation?.reason == 0)
        #expect(report.subscriptions[0].events.isEmpty, "first sight is a baseline")
    }

    @Test func anIOS6ExpiredReceiptIsValidAndExpired() throws {
        let report = try Inspection(body: Array(Fixture.veniceExpiredIOS6.bytes()), now: Self.now)
        #expect(report.status == 21006)
        #expect(report.action.hasPrefix("valid (21006"))
        #expect(report.subscriptions.map(\.state.status) == [.expired])
        #expect(report.subscriptions[0].state.expirationIntent == 1)
    }

    @Test func everySubscriptionInTheReceiptIsListedUnlessOneIsChosen() throws {
        let all = try Inspection(body: Array(Fixture.sandbox.bytes()), now: Self.now)
        #expect(all.environment == .sandbox)
        #expect(all.subscriptions.map(\.originalTransactionID) == ["1000000248850692"])
        let one = try Inspection(
            body: Array(Fixture.sandbox.bytes()), now: Self.now, originalTransactionID: "1000000248850692")
        #expect(one.subscriptions.map(\.originalTransactionID) == ["1000000248850692"])
    }

    @Test func aOneTimePurchaseIsListedApartNotAsAnExpiredSubscription() throws {
        // The real receipt holds a non-consumable (no expires_date) beside a subscription.
        let report = try Inspection(body: Array(Fixture.sandbox.bytes()), now: Self.now)
        #expect(!report.subscriptions.map(\.originalTransactionID).contains("1000000197013632"))
        let purchase = try #require(report.purchases.first)
        #expect(report.purchases.count == 1)
        #expect(purchase.transactionID == "1000000197013632")
        #expect(purchase.productID == "com.sumiapp.GridDiary.pro")
        #expect(purchase.purchasedAt == ms(1_456_906_836_000))
        #expect(purchase.quantity == 1)
        #expect(purchase.environment == .sandbox)
        #expect(purchase.status == .owned)
    }

    @Test func aConfiguredNonRenewingProductIsAPurchaseEvenWithAnExpiry() throws {
        let report = try Inspection(
            body: Array(Fixture.sandbox.bytes()), now: Self.now,
            nonRenewingProductIDs: ["com.sumiapp.GridDiary.pro.subscription"])
        #expect(report.subscriptions.isEmpty)
        #expect(report.purchases.count == 15)
    }

    @Test func aStoredStateTurnsChangesIntoEvents() throws {
        // The latest-only response as Apple would have answered it in June 2017 (recorded in
        // October 2018: only its request date differs), then as recorded.
        let recorded = String(decoding: try Fixture.excludeOld.bytes(), as: UTF8.self)
        let june = recorded.replacingOccurrences(of: "\"request_date_ms\":\"1538738660205\"", with: "\"request_date_ms\":\"1496275200000\"")
        #expect(june != recorded)
        let earlier = try Inspection(body: Array(june.utf8), now: Self.now)
        let stored = try #require(earlier.subscriptions.first?.state)
        #expect(stored.status == .active)
        let later = try Inspection(body: Array(Fixture.excludeOld.bytes()), now: Self.now, stored: stored)
        #expect(later.subscriptions[0].state.status == .expired)
        #expect(later.subscriptions[0].events.map(\.type) == [.expired])
    }

    @Test(arguments: [
        (Fixture.productionSaysSandbox, 21007, "sandbox receipt"),
        (Fixture.sandboxSaysProduction, 21008, "production receipt"),
        (Fixture.invalidReceipt, 21002, "retry later"),
        (Fixture.malformedWithException, 21002, "retry later"),
        (Fixture.offline, 21005, "retry later: the App Store is unavailable"),
    ])
    func anErrorStatusIsReportedWithoutSubscriptions(fixture: Fixture, status: Int, action: String) throws {
        let report = try Inspection(body: Array(fixture.bytes()), now: Self.now)
        #expect(report.status == status)
        #expect(report.action.hasPrefix(action))
        #expect(report.subscriptions.isEmpty)
    }

    @Test func anUnreadableBodyThrowsTheDecodingError() {
        #expect(throws: ResponseDecodingError.self) {
            try Inspection(body: Array("<html>502 Bad Gateway</html>".utf8), httpStatus: 502, now: Self.now)
        }
    }
}
