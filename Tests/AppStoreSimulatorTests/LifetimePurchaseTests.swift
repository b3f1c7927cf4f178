import AppStoreSimulator
import Foundation
import Testing

/// A lifetime non-consumable: listed without an expiry beside a subscription or alone, and with
/// its cancellation once Apple refunds it, as its ground truth says.
@Suite struct LifetimePurchaseTests {
    static func entries(_ json: [String: Any], _ transactionID: String) -> [[String: Any]] {
        let inApp = ((json["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]]) ?? []
        let latest = (json["latest_receipt_info"] as? [[String: Any]]) ?? []
        return (inApp + latest).filter { $0["transaction_id"] as? String == transactionID }
    }

    @Test("answers list the purchase without an expiry, refunded as the ground truth says", arguments: 0..<6)
    func answersMatchTheTruth(round: Int) async throws {
        let receipt = receipt(.lifetimePurchase, round: round)
        let purchase = try #require(receipt.lifetimePurchase)
        #expect(receipt.subscriptions.count == (purchase.isAlone ? 0 : 1))
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            for now in stride(from: anchorMs - 10 * day, through: anchorMs + 40 * day, by: Int(5 * day)) {
                try await setClock(client, to: now)
                let response = try await verify(client, receipt.receiptData)
                let json = try #require(jsonObject(response.body))
                guard let truth = purchase.status(at: now) else {
                    #expect(Self.entries(json, purchase.transactionID).isEmpty)
                    continue
                }
                #expect(json["status"] as? Int == 0, "a receipt with only a lifetime purchase is valid")
                let entries = Self.entries(json, purchase.transactionID)
                #expect(!entries.isEmpty)
                #expect(entries.allSatisfy { $0["expires_date_ms"] == nil && $0["product_id"] as? String == SimulatedLifetimePurchase.productID })
                #expect(entries.allSatisfy { ($0["cancellation_date_ms"] != nil) == (truth == "refunded") }, "round \(round) at \(now)")
            }
        }
    }

    @Test("a fleet holds lifetime purchases alone and beside a subscription, kept and refunded")
    func fleetCoversEachVariant() {
        let purchases = SimulatedReceipt.fleet(count: 20 * LifecycleKind.allCases.count, seed: 7, anchorMs: anchorMs)
            .compactMap(\.lifetimePurchase)
        #expect(purchases.count == 20)
        #expect(Set(purchases.map(\.isAlone)) == [true, false])
        #expect(Set(purchases.map { $0.status(at: anchorMs + 60 * day) }) == ["owned", "refunded"])
    }
}
