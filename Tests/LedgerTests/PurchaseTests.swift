import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// One-time purchases in the ledger: one row per app and transaction, events in the outbox with
/// the purchase's id, written idempotently, and with a subscription's write in its transaction.
@Suite struct PurchaseTests {
    typealias S = Scenario
    static let bought = S.day(2, 3, hour: 9)

    /// A response holding January's subscription period and a lifetime purchase (no expires_date).
    static func response(refundedAt refund: Instant? = nil, judgedAt: Instant? = nil) throws -> VerifyReceiptResponse {
        var lifetime: [String: Any] = [
            "quantity": "1", "transaction_id": "5001", "original_transaction_id": "5001",
            "product_id": "com.example.lifetime", "purchase_date_ms": String(bought.millisecondsSince1970),
        ]
        if let refund {
            lifetime["cancellation_date_ms"] = String(refund.millisecondsSince1970)
            lifetime["cancellation_reason"] = "1"
        }
        var receipt: [String: Any] = ["receipt_type": "Production", "in_app": [lifetime]]
        if let judgedAt { receipt["request_date_ms"] = String(judgedAt.millisecondsSince1970) }
        let body: [String: Any] = [
            "status": 0, "environment": "Production", "receipt": receipt,
            "latest_receipt_info": S.months("1000", 2).map(\.json),
        ]
        return try VerifyReceiptResponse(body: JSONSerialization.data(withJSONObject: body), httpStatus: 200)
    }

    static func write(_ response: VerifyReceiptResponse, after: Instant? = S.day(2, 1), account: String? = "acct-1")
        -> PurchaseWrite
    {
        PurchaseWrite(app: "default", found: OneTimePurchases(response), announcingPurchasesAfter: after, accountID: account)
    }

    static func purchaseEvents(_ ledger: Ledger) throws -> [String] {
        try ledger.connection.query("SELECT type FROM events WHERE purchase_id IS NOT NULL ORDER BY seq")
            .map { try $0["type"].text() ?? "" }
    }

    static func storedStatus(_ ledger: Ledger) throws -> String? {
        try ledger.connection.query("SELECT status FROM purchases WHERE transaction_id = '5001'").first?["status"].text()
    }

    @Test func aNewPurchaseIsStoredAndAnnouncedOnceHoweverOftenItIsRecorded() async throws {
        try await withLedger { ledger, _ in
            let first = try ledger.recordPurchases(Self.write(Self.response()))
            #expect(first.created == ["5001"])
            let record = try #require(first.records.first)
            #expect(record.purchase.status == .owned)
            #expect(record.purchase.productID == "com.example.lifetime")
            #expect(record.purchase.purchasedAt == Self.bought)
            #expect(record.accountID == "acct-1")
            let again = try ledger.recordPurchases(Self.write(Self.response()))
            #expect(again.created.isEmpty)
            #expect(again.records.map(\.id) == [record.id])
            #expect(try Self.purchaseEvents(ledger) == ["non_renewing_purchase"])
            let linked = try ledger.connection.query(
                "SELECT purchase_id, subscription_id FROM events")[0]
            #expect(try linked["purchase_id"].int64() == record.id)
            #expect(try linked["subscription_id"].isNull)
        }
    }

    /// A purchase is true as of the moment Apple judged the receipt, not of when the ledger wrote
    /// it: the night's other writes (a subscription's `last_verified_at`) are stamped the same way.
    @Test func aPurchaseIsStampedWithTheMomentAppleJudgedTheReceipt() async throws {
        try await withLedger { ledger, _ in
            let firstLook = S.day(2, 5)
            let created = try ledger.recordPurchases(Self.write(Self.response(judgedAt: firstLook)))
            #expect(created.records.first.map { Instant($0.lastVerifiedAt) } == firstLook)
            let refundLook = S.day(3, 5)
            let refunded = try ledger.recordPurchases(Self.write(Self.response(refundedAt: S.day(3, 1), judgedAt: refundLook)))
            #expect(refunded.records.first.map { Instant($0.lastVerifiedAt) } == refundLook)
            #expect(try ledger.purchase(transactionID: "5001").map { Instant($0.lastVerifiedAt) } == refundLook)
        }
    }

    @Test func aPurchaseOlderThanTheStoredKnowledgeIsABaseline() async throws {
        try await withLedger { ledger, _ in
            _ = try ledger.recordPurchases(Self.write(Self.response(), after: S.day(2, 4)))
            #expect(try ledger.purchase(transactionID: "5001") != nil)
            #expect(try Self.purchaseEvents(ledger).isEmpty)
        }
    }

    @Test func aRefundFoundLaterIsStoredAndAnnouncedOnce() async throws {
        try await withLedger { ledger, _ in
            _ = try ledger.recordPurchases(Self.write(Self.response(), after: nil))
            #expect(try Self.storedStatus(ledger) == "owned")
            let refund = S.day(2, 10)
            let refunded = try ledger.recordPurchases(Self.write(Self.response(refundedAt: refund), after: nil))
            #expect(refunded.records.first?.purchase.status == .refunded)
            #expect(refunded.records.first?.purchase.cancellation == Cancellation(cancelledAt: refund, reason: 1))
            _ = try ledger.recordPurchases(Self.write(Self.response(refundedAt: refund), after: nil))
            #expect(try Self.purchaseEvents(ledger) == ["refunded"])
            #expect(try ledger.purchase(transactionID: "5001")?.purchase.status == .refunded)
            #expect(try Self.storedStatus(ledger) == "refunded", "the stored column, which the demo's check reads")
        }
    }

    @Test func theAccountLinkIsSetOnceAndNeverMoved() async throws {
        try await withLedger { ledger, _ in
            _ = try ledger.recordPurchases(Self.write(Self.response(), account: nil))
            _ = try ledger.recordPurchases(Self.write(Self.response(), account: "acct-1"))
            let other = try ledger.recordPurchases(Self.write(Self.response(), account: "acct-2"))
            #expect(other.records.first?.accountID == "acct-1")
            #expect(try ledger.purchases(accountID: "acct-1").map(\.purchase.transactionID) == ["5001"])
            #expect(try ledger.purchases(accountID: "acct-2").isEmpty)
        }
    }

    @Test func aWorkersWriteRecordsTheReceiptsPurchasesWithTheSubscriptionOnlyWhenWritten() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            let response = try Self.response(refundedAt: S.day(2, 10))
            var write = try S.write(baseline, response, at: S.day(2, 11))
            write.purchases = Self.write(response, after: nil, account: nil)
            #expect(try ledger.persist([write], nextNightlyRun: S.nightlyRun).first?.writtenVersion == 2)
            #expect(try ledger.purchase(transactionID: "5001")?.purchase.status == .refunded)

            // A stale write (it read version 1) writes nothing, purchases included.
            try ledger.connection.execute("DELETE FROM purchases WHERE transaction_id = '5001'")
            #expect(try ledger.persist(write, nextNightlyRun: S.nightlyRun).isStale)
            #expect(try ledger.purchase(transactionID: "5001") == nil)
        }
    }
}
