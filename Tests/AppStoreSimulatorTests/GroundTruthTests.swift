import AppStoreSimulator
import Foundation
import Testing

@Suite("Answers agree with the ground truth over time")
struct GroundTruthTests {
    /// Moments to look at: production from 10 days before the anchor to 5 months after, sandbox over
    /// an hour in minutes (its months last five minutes).
    static func moments(_ environment: SimulatedEnvironment) -> [Int64] {
        let minute: Int64 = 60_000
        let (start, end, step) = environment == .production
            ? (anchorMs - 10 * day, anchorMs + 150 * day, 2 * day)
            : (anchorMs - 5 * minute, anchorMs + 60 * minute, minute)
        return Array(stride(from: start, through: end, by: Int(step)))
    }

    @Test("each kind's answers read as its ground truth at every moment", arguments: LifecycleKind.allCases)
    func answersMatchTruth(kind: LifecycleKind) async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            var statusesSeen = Set<SubscriptionStatus>()
            for round in 0..<3 {
                let receipt = receipt(kind, round: round)
                for now in Self.moments(receipt.token.environment) {
                    try await setClock(client, to: now)
                    let response = try await verify(client, receipt.receiptData, sandbox: kind == .sandbox)
                    let json = try #require(jsonObject(response.body))
                    let status = try #require(json["status"] as? Int)
                    for subscription in receipt.subscriptions {
                        let truth = subscription.groundTruth(at: now)
                        statusesSeen.insert(truth.status)
                        switch (kind, truth.status) {
                        case (.malformed, _): #expect(status == 21002)
                        case (.deletedAccount, _): #expect(status == 21010)
                        case (_, .invalid):
                            // Not bought yet: the receipt does not exist (21002), or does without this subscription.
                            let entries = (json["latest_receipt_info"] as? [[String: Any]]) ?? []
                            #expect(status == 21002 || status == 0)
                            #expect(!entries.contains { $0["original_transaction_id"] as? String == subscription.originalTransactionID })
                        default:
                            #expect(status == 0)
                            let read = ReadState.read(json, originalTransactionID: subscription.originalTransactionID, now: now)
                            #expect(read == ReadState(truth), "\(kind) round \(round) at \(now)")
                        }
                    }
                }
            }
            // The kind's story really unfolds over the moments looked at.
            let expected: Set<SubscriptionStatus> = switch kind {
            case .renewing, .familyShared, .trialConversion, .upgrade, .planChange, .renewalExtended, .priceIncrease,
                 .lateRefund, .lifetimePurchase, .offerRedeemed: [.active]
            case .autoRenewOff, .sandbox, .resubscribed, .twoGroups: [.active, .expired]
            case .refunded, .refundReversed: [.active, .refunded]
            case .billingRecovered: [.active, .inGrace, .inBillingRetry]
            case .billingExpired: [.active, .inBillingRetry, .expired]
            case .malformed, .deletedAccount: [.invalid]
            }
            #expect(expected.isSubset(of: statusesSeen), "\(kind) only showed \(statusesSeen)")
        }
    }

    @Test("a seeded fleet holds every kind and every status at its anchor")
    func fleetCoversEverything() {
        let receipts = SimulatedReceipt.fleet(count: 20 * LifecycleKind.allCases.count, seed: 7, anchorMs: anchorMs)
        let truths = receipts.flatMap(\.subscriptions).map { $0.groundTruth(at: anchorMs) }
        #expect(Set(truths.map(\.kind)) == Set(LifecycleKind.allCases))
        #expect(Set(truths.map(\.status)) == Set(SubscriptionStatus.allCases))
        #expect(truths.count == receipts.count + 20 - 10,
                "two_groups receipts hold two subscriptions; lifetime_purchase receipts of odd rounds none")
        #expect(truths.filter { $0.environment == .sandbox }.allSatisfy { $0.kind == .sandbox })
    }

    @Test("the same token always tells the same story")
    func deterministic() {
        let first = SimulatedReceipt.fleet(count: 28, seed: 99, anchorMs: anchorMs)
        let again = SimulatedReceipt.fleet(count: 28, seed: 99, anchorMs: anchorMs)
        let otherSeed = SimulatedReceipt.fleet(count: 28, seed: 100, anchorMs: anchorMs)
        let truths = { (receipts: [SimulatedReceipt]) in
            receipts.flatMap(\.subscriptions).map { $0.groundTruth(at: anchorMs + 20 * day) }
        }
        #expect(truths(first) == truths(again))
        #expect(truths(first).map(\.originalTransactionID) != truths(otherSeed).map(\.originalTransactionID))
    }

    @Test("a seed line carries every field, absent ones as null")
    func seedLineShape() throws {
        let truth = receipt(.malformed).subscriptions[0].groundTruth(at: anchorMs)
        let line = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(truth)) as? [String: Any])
        #expect(Set(line.keys) == [
            "receipt_data", "bundle_id", "original_transaction_id", "environment", "kind", "at_ms", "status", "product_id",
            "expires_at_ms", "auto_renew", "auto_renew_product_id", "expiration_intent", "ownership",
        ])
        #expect(line["status"] as? String == "invalid")
        #expect(line["expires_at_ms"] is NSNull)
        #expect(try JSONDecoder().decode(GroundTruth.self, from: JSONEncoder().encode(truth)) == truth)
    }
}
