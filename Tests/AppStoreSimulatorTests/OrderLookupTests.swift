@testable import AppStoreSimulator
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// The simulator's orders: each transaction's order id leads back to it, and Look Up Order ID is
/// production's only (Apple has no sandbox for it).
@Suite struct OrderLookupTests {
    @Test func eachTransactionsOrderIDLeadsBackToItAndLooksLikeApples() {
        let receipt = receipt(.renewing, seed: ServerAPITests.seed)
        for script in receipt.scripts {
            for sequence in [0, 1, 17] {
                let id = receipt.identifiers.transactionID(chain: script.chain, sequence: sequence)
                let order = SimulatedOrder.orderID(ofTransactionID: id)
                #expect(order.map { $0.count == 10 && $0.hasPrefix("M") && $0.allSatisfy { $0.isUppercase || $0.isNumber } } == true)
                #expect(order.flatMap(SimulatedOrder.transactionID(ofOrderID:)) == id)
            }
        }
        #expect(SimulatedOrder.orderID(ofTransactionID: 42) == nil)
        #expect(SimulatedOrder.transactionID(ofOrderID: "MZZZZZZZZZ") == nil, "past the simulator's ids")
    }

    @Test func onlyProductionLooksOrdersUp() async throws {
        let first = try #require(receipt(.renewing, seed: ServerAPITests.seed).subscriptions.first).originalTransactionID
        let order = try #require(UInt64(first).flatMap(SimulatedOrder.orderID(ofTransactionID:)))
        let (production, sandbox, body) = try await withClient(try ServerAPITests.simulator()) { client in
            let production = try await ServerAPITests.get(client, "/inApps/v1/lookup/\(order)", token: try ServerAPITests.token())
            let sandbox = try await ServerAPITests.get(client, "/sandbox/inApps/v1/lookup/\(order)", token: try ServerAPITests.token())
            return (production.status.code, sandbox.status.code, String(buffer: production.body))
        }
        #expect(production == 200 && body.contains("\"status\":0") && body.contains("signedTransactions"), "\(body)")
        #expect(sandbox == 404, "Look Up Order ID is not available in the sandbox")
    }
}
