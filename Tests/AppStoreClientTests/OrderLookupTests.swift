import AppStore
import AppStoreClients
import AppStoreSimulator
import Foundation
import Testing

/// Look Up Order ID as the simulator speaks it and the client reads it: the order's transaction,
/// verified and read as the history reads it; an order the app does not have (a sandbox purchase's
/// too: Apple has no sandbox for it) is status 1; a malformed id Apple's 400; a refused key 401;
/// past the rate limit 429 with Retry-After.
@Suite struct OrderLookupTests {
    static let anchorMs: Int64 = 1_795_000_000_000
    static let nowMs = anchorMs + 20 * 86_400_000
    static let receipts = SimulatedReceipt.fleet(count: 60, seed: 11, anchorMs: anchorMs)
    static let truths = receipts.flatMap(\.subscriptions).map { $0.groundTruth(at: nowMs) }

    static func order(of transactionID: String) throws -> String {
        try #require(UInt64(transactionID).flatMap(SimulatedOrder.orderID(ofTransactionID:)))
    }

    static func error(_ call: () throws -> Void) -> ServerAPICallError? {
        do {
            try call()
            return nil
        } catch {
            return error as? ServerAPICallError
        }
    }

    @Test func anOrderListsItsTransactionVerifiedAsTheHistoryReadsIt() async throws {
        let truth = try #require(Self.truths.first { $0.kind == .renewing && $0.environment == .production && $0.status == .active })
        let (history, orders) = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs) { client in
            let history = client.verify(originalTransactionID: truth.originalTransactionID, knownLatestTransactionID: nil, refunds: .due) { _ in true }
                .response?.latestReceiptInfo.filter { $0.originalTransactionID == truth.originalTransactionID } ?? []
            let orders = try history.map { transaction in try client.lookUpOrder(try Self.order(of: transaction.transactionID)) }
            return (history, orders)
        }
        #expect(history.count >= 2, "a first purchase and a renewal at least")
        for (transaction, order) in zip(history, orders) {
            let listed = try #require(order, "Apple knows the order of every transaction so far")
            #expect(listed.count == 1)
            #expect(listed.first?.transactionID == transaction.transactionID)
            #expect(listed.first?.originalTransactionID == truth.originalTransactionID)
            #expect(listed.first?.productID == transaction.productID)
            #expect(listed.first?.purchaseDate == transaction.purchaseDate && listed.first?.expiresDate == transaction.expiresDate)
        }
    }

    @Test func aLifetimePurchasesOrderListsTheNonConsumable() async throws {
        let purchase = try #require(Self.receipts.first {
            $0.token.environment == .production && $0.lifetimePurchase?.status(at: Self.nowMs) != nil
        }?.lifetimePurchase)
        let listed = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs) { client in
            try client.lookUpOrder(try Self.order(of: purchase.transactionID))
        }
        let transaction = try #require(listed?.first)
        #expect(transaction.transactionID == purchase.transactionID && transaction.productID == SimulatedLifetimePurchase.productID)
        #expect(transaction.purchaseDate?.millisecondsSince1970 == purchase.purchaseMs && transaction.expiresDate == nil)
        #expect((transaction.cancellationDate != nil) == (purchase.status(at: Self.nowMs) == "refunded"))
    }

    @Test func anOrderTheAppDoesNotHaveIsStatusOneAndASandboxPurchasesToo() async throws {
        let sandbox = try #require(Self.truths.first { $0.environment == .sandbox && $0.status != .invalid })
        let sandboxOrder = try Self.order(of: sandbox.originalTransactionID)
        let answers = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs) { client in
            [try client.lookUpOrder("MZZZZZZZZZ"), try client.lookUpOrder("MQ5V6W7X8Y1"), try client.lookUpOrder(sandboxOrder)]
        }
        #expect(answers.count == 3 && answers.allSatisfy { $0 == nil }, "\(answers)")
    }

    @Test func appleRefusesAMalformedOrderIDAndAnUnknownKey() async throws {
        let malformed = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs) { client in
            Self.error { _ = try client.lookUpOrder("MQ5V-6W7X8") }
        }
        #expect(malformed?.code == 4_000_000 && malformed?.description.contains("HTTP 400") == true, "\(String(describing: malformed))")
        // A dot-segment stays the order id Apple judges: it never reaches another of Apple's paths.
        for dots in ["..", "../../v1/subscriptions/1", "."] {
            let refused = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs) { client in
                Self.error { _ = try client.lookUpOrder(dots) }
            }
            #expect(refused?.code == 4_000_000, "\(dots): \(String(describing: refused))")
        }
        let unauthorized = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs, unknownKey: true) { client in
            Self.error { _ = try client.lookUpOrder("MQ5V6W7X8Y") }
        }
        #expect(unauthorized?.description.contains("HTTP 401 for key SIMKEY") == true, "\(String(describing: unauthorized))")
        #expect(unauthorized?.description.contains("PRIVATE KEY") == false)
    }

    @Test func pastTheRateLimitALookupIsAnswered429WithRetryAfter() async throws {
        let refusals = try await withSimulatedServerAPIClient(anchorMs: Self.anchorMs, nowMs: Self.nowMs, knobs: FaultKnobs(rateLimit: 1)) { client in
            (0..<3).compactMap { _ in Self.error { _ = try client.lookUpOrder("MQ5V6W7X8Y") } }
        }
        #expect(!refusals.isEmpty && refusals.allSatisfy { $0.code == 4_290_000 && $0.retryAfter == .seconds(1) }, "\(refusals)")
    }
}
