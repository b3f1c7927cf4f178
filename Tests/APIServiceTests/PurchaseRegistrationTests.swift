import AppStoreSimulator
import Fleet
import Foundation
import Logging
import TestSupport
import Testing

/// One-time purchases through the API: a receipt holding only a lifetime purchase registers, the
/// purchase is an entitlement until refunded, a fresh purchase is announced once, and a worker's
/// re-check of the subscription beside it finds its refund.
@Suite struct PurchaseRegistrationTests {
    static let beside = LifecycleKind.allCases.firstIndex(of: .lifetimePurchase)!
    static let alone = beside + LifecycleKind.allCases.count

    @Test func aReceiptHoldingOnlyALifetimePurchaseIsRegisteredAndShownAsAnEntitlement() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt(index: Self.alone)
            let purchase = try #require(receipt.lifetimePurchase)
            #expect(purchase.isAlone && receipt.subscriptions.isEmpty)
            let registered = try await api.post("/v1/receipts", ["receipt": receipt.receiptData, "account_id": "acct-1"])
            #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect((registered.json["subscriptions"] as? [Any])?.isEmpty == true)
            let items = try #require(registered.json["purchases"] as? [[String: Any]])
            #expect(items.count == 1)
            #expect(items.first?["account"] as? String == "linked")
            #expect(items.first?["created"] as? Bool == true)
            let status = purchase.status(at: api.simulator.store.clock.nowMs)
            let view = try #require(items.first?["purchase"] as? [String: Any])
            #expect(view["transaction_id"] as? String == purchase.transactionID)
            #expect(view["status"] as? String == status)

            let byAccount = try await api.get("/v1/purchases?account_id=acct-1")
            let listed = try #require((byAccount.json["purchases"] as? [[String: Any]])?.first)
            #expect(listed["product_id"] as? String == SimulatedLifetimePurchase.productID)
            let entitlement = try #require(listed["entitlement"] as? [String: Any])
            #expect(entitlement["active"] as? Bool == (status == "owned"))
            #expect(entitlement["until"] is NSNull)
            let byTransaction = try await api.get("/v1/purchases?transaction_id=\(purchase.transactionID)")
            #expect((byTransaction.json["purchases"] as? [Any])?.count == 1)
            #expect(try await api.get("/v1/purchases").code == "invalid_query")
        }
    }

    @Test func aPurchaseJustMadeIsAnnouncedOnceAndARestoreIsNot() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt(index: Self.alone)
            let purchase = try #require(receipt.lifetimePurchase)
            api.simulator.store.clock.set(nowMs: purchase.purchaseMs + 3_600_000)  // an hour after the purchase
            for _ in 0..<2 {
                #expect(try await api.post("/v1/receipts", ["receipt": receipt.receiptData]).status == 200)
            }
            #expect(try await api.count(
                "SELECT count(*) AS n FROM events WHERE type = 'non_renewing_purchase' AND purchase_id IS NOT NULL") == 1)

            let restored = api.receipt(index: Self.alone + 2 * LifecycleKind.allCases.count)
            let old = try #require(restored.lifetimePurchase)
            api.simulator.store.clock.set(nowMs: old.purchaseMs + 3 * 86_400_000)  // three days later: a restore
            #expect(try await api.post("/v1/receipts", ["receipt": restored.receiptData]).status == 200)
            #expect(try await api.count("SELECT count(*) AS n FROM purchases") == 2)
            #expect(try await api.count("SELECT count(*) AS n FROM events WHERE type = 'non_renewing_purchase'") == 1)
        }
    }

    @Test func aWorkersRecheckOfTheSubscriptionFindsTheLifetimePurchasesRefund() async throws {
        try await APIHarness.with { api in
            // A receipt whose lifetime purchase beside the subscription is refunded while the subscription runs.
            let found = (1...500).lazy.compactMap { seed -> (SimulatedReceipt, Int64)? in
                let receipt = api.receipt(index: Self.beside, seed: UInt64(seed))
                guard let refund = receipt.lifetimePurchase?.refund?.atMs,
                      receipt.subscriptions.first?.groundTruth(at: refund - 60_000).status == .active
                else { return nil }
                return (receipt, refund)
            }.first
            let (receipt, refund) = try #require(found)
            api.simulator.store.clock.set(nowMs: refund - 60_000)
            let registered = try await api.post("/v1/receipts", ["receipt": receipt.receiptData, "account_id": "acct-1"])
            let items = try #require(registered.json["subscriptions"] as? [[String: Any]])
            let id = try #require((items.first?["subscription"] as? [String: Any])?["id"] as? Int)
            let owned = (registered.json["purchases"] as? [[String: Any]])?.first?["purchase"] as? [String: Any]
            #expect(owned?["status"] as? String == "owned")

            api.simulator.store.clock.set(nowMs: refund + 60_000)
            let fleet = api.fleet
            _ = try await onOwnThread {
                try ImmediateVerification.run(subscriptionID: Int64(id), settings: fleet, logger: Logger(label: "test"))
            }
            let listed = try await api.get("/v1/purchases?account_id=acct-1")
            let refunded = try #require((listed.json["purchases"] as? [[String: Any]])?.first)
            #expect(refunded["status"] as? String == "refunded")
            #expect((refunded["entitlement"] as? [String: Any])?["active"] as? Bool == false)
            #expect(try await api.count(
                "SELECT count(*) AS n FROM events WHERE type = 'refunded' AND purchase_id IS NOT NULL") == 1)
        }
    }
}
