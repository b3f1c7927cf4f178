import AppStore
import Foundation
import Testing

/// One-time purchases (non-consumables, non-renewing subscriptions): read apart from the
/// subscriptions, owned until refunded, announced only when they are news.
@Suite struct OneTimePurchaseTests {
    static let lifetime = "com.example.lifetime"
    static let bought = utc("2024-03-01T10:00:00.000Z")
    static let answered = utc("2024-03-01T12:00:00.000Z")

    /// A response with a monthly subscription and a lifetime purchase (no `expires_date`).
    static func response(lifetimeRefundedAt refund: Instant? = nil, reason: Int? = nil) throws -> VerifyReceiptResponse {
        var lifetime: [String: Any] = [
            "quantity": "1", "transaction_id": "5001", "original_transaction_id": "5001", "product_id": Self.lifetime,
            "purchase_date_ms": String(bought.millisecondsSince1970), "in_app_ownership_type": "PURCHASED",
        ]
        if let refund { lifetime["cancellation_date_ms"] = String(refund.millisecondsSince1970) }
        if let reason { lifetime["cancellation_reason"] = String(reason) }
        let monthly: [String: Any] = [
            "quantity": "1", "transaction_id": "1001", "original_transaction_id": "1000", "product_id": "com.example.pro.monthly",
            "purchase_date_ms": "1706745600000", "expires_date_ms": "1709251200000",
        ]
        let body: [String: Any] = [
            "status": 0, "environment": "Production",
            "receipt": ["request_date_ms": String(answered.millisecondsSince1970), "in_app": [lifetime, monthly]],
            "latest_receipt_info": [monthly],
        ]
        return try VerifyReceiptResponse(body: Array(JSONSerialization.data(withJSONObject: body)), httpStatus: 200)
    }

    static func stored(refunded: Bool) throws -> [Purchase] {
        let response = try response(lifetimeRefundedAt: refunded ? utc("2024-03-05T00:00:00.000Z") : nil)
        return OneTimePurchases(response).purchases
    }

    @Test func onlyEntriesWithoutExpiryArePurchasesAndTheSubscriptionAnalysisKeepsIgnoringThem() throws {
        let response = try Self.response()
        let purchases = OneTimePurchases(response).purchases
        #expect(purchases.map(\.transactionID) == ["5001"])
        #expect(purchases[0].status == .owned)
        #expect(purchases[0].environment == .production)
        #expect(purchases[0].ownership == .purchased)
        #expect(OneTimePurchases.subscriptionIDs(in: response) == ["1000"])
        let analysis = try SubscriptionAnalyzer.analyze(
            stored: nil, response: response, originalTransactionID: "1000", now: Self.answered.date)
        #expect(analysis.otherOriginalTransactionIDs == ["5001"])
        #expect(analysis.transactions.map(\.transactionID) == ["1001"])
    }

    @Test func aRefundMakesThePurchaseRefundedWithItsReason() throws {
        let refund = utc("2024-03-05T00:00:00.000Z")
        let purchase = try #require(OneTimePurchases(Self.response(lifetimeRefundedAt: refund, reason: 1)).purchases.first)
        #expect(purchase.status == .refunded)
        #expect(purchase.cancellation == Cancellation(cancelledAt: refund, reason: 1))
    }

    @Test func firstSightIsABaseline() throws {
        let analysis = OneTimePurchases(try Self.response()).analyze(stored: [], announcingPurchasesAfter: nil)
        #expect(analysis.purchases.count == 1)
        #expect(analysis.events.isEmpty)
        let olderThanTheWindow = OneTimePurchases(try Self.response())
            .analyze(stored: [], announcingPurchasesAfter: utc("2024-03-01T11:00:00.000Z"))
        #expect(olderThanTheWindow.events.isEmpty, "bought before the fleet's knowledge: a restore or an import")
    }

    @Test func aPurchaseNewerThanTheStoredKnowledgeIsAnnounced() throws {
        let analysis = OneTimePurchases(try Self.response())
            .analyze(stored: [], announcingPurchasesAfter: utc("2024-02-29T12:00:00.000Z"))
        let event = try #require(analysis.events.first)
        #expect(analysis.events.count == 1)
        #expect(event.type == .nonRenewingPurchase)
        #expect(event.originalTransactionID == "5001")
        #expect(event.occurredAt == Self.bought)
        #expect(event.payload["transaction_id"] == .string("5001"))
        #expect(event.payload["product_id"] == .string(Self.lifetime))
        #expect(event.payload["quantity"] == .integer(1))
        #expect(event.payload["environment"] == .string("Production"))
        #expect(event.payload["is_trial"] == .null)
        #expect(event.id == "72f9a63b-a6e4-8c7d-b72a-598fea50383d", "the id docs/events.md shows for this purchase")
    }

    @Test func aStoredPurchaseIsNotAnnouncedAgain() throws {
        let analysis = OneTimePurchases(try Self.response())
            .analyze(stored: try Self.stored(refunded: false), announcingPurchasesAfter: utc("2024-02-29T12:00:00.000Z"))
        #expect(analysis.events.isEmpty)
    }

    @Test func aNewRefundIsAnnouncedOnce() throws {
        let refund = utc("2024-03-05T00:00:00.000Z")
        let response = try Self.response(lifetimeRefundedAt: refund, reason: 0)
        let first = OneTimePurchases(response).analyze(stored: try Self.stored(refunded: false), announcingPurchasesAfter: nil)
        #expect(first.events.map(\.type) == [.refunded])
        #expect(first.events[0].occurredAt == refund)
        #expect(first.events[0].id == "0aa81010-c056-8406-be5b-05fb107c86c2", "the id docs/events.md shows")
        #expect(first.events[0].payload["cancellation_reason"] == .integer(0))
        #expect(first.events[0].payload["cancellation_reason_meaning"] == .string("another reason, such as an accidental purchase"))
        let again = OneTimePurchases(response).analyze(stored: first.purchases, announcingPurchasesAfter: nil)
        #expect(again.events.isEmpty)
        let seenFirstRefunded = OneTimePurchases(response).analyze(stored: [], announcingPurchasesAfter: nil)
        #expect(seenFirstRefunded.events.isEmpty, "a refund seen at first sight is part of the baseline")
    }

    @Test func anAnnouncedPurchaseAlreadyRefundedFiresBothInOrder() throws {
        let response = try Self.response(lifetimeRefundedAt: utc("2024-03-01T11:00:00.000Z"), reason: 1)
        let analysis = OneTimePurchases(response).analyze(stored: [], announcingPurchasesAfter: utc("2024-03-01T00:00:00.000Z"))
        #expect(analysis.events.map(\.type) == [.nonRenewingPurchase, .refunded])
    }
}
