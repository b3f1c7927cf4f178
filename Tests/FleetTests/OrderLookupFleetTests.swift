import AppStoreSimulator
import Foundation
import TestSupport
import Testing

/// `receiptfleet subscriptions show --order`, as support runs it with the order id a customer
/// quotes from Apple's receipt email: the binary asks the simulated Look Up Order ID and shows the
/// ledger's subscription or one-time purchase of each transaction (issue 30, part 5).
@Suite struct OrderLookupFleetTests {
    @Test func anOrderShowsItsTransactionsWithTheLedgersSubscriptionOrPurchase() async throws {
        try await FleetSetup.withServerAPIKey(receipts: 40) { setup, environment in
            _ = try await setup.work()
            let renewing = setup.subscriptions.filter { $0.receipt.kind == .renewing && $0.receipt.token.environment == .production }
                .map { "'\($0.originalTransactionID)'" }
            let subscription = try await setup.count("""
                SELECT min(id) AS n FROM subscriptions WHERE original_transaction_id IN (\(renewing.joined(separator: ",")))
                """)
            #expect(subscription > 0)
            // Its latest transaction: the order of the receipt email a customer got last.
            let latest = try await setup.count("""
                SELECT transaction_id::bigint AS n FROM transactions WHERE subscription_id = \(subscription)
                    ORDER BY purchased_at DESC LIMIT 1
                """)
            let order = try #require(SimulatedOrder.orderID(ofTransactionID: UInt64(latest)))

            let shown = try await runFleetCommand(["subscriptions", "show", "--order", order], environment: environment)
            #expect(shown.status == 0, "\(shown.output)")
            #expect(shown.output.contains("order \(order)  (default, Apple's Look Up Order ID, production): 1 transaction(s)"), "\(shown.output)")
            #expect(shown.output.contains("  \(latest)  com.receiptfleet.demo."), "the transaction, as Apple signed it: \(shown.output)")
            #expect(shown.output.contains("→ subscription \(subscription)\n"), "\(shown.output)")
            #expect(shown.output.contains("subscription \(subscription)  (default, original_transaction_id"), "its report follows: \(shown.output)")

            let lifetime = try #require(setup.fleet.first {
                $0.token.environment == .production && $0.lifetimePurchase?.isAlone == false
                    && $0.lifetimePurchase?.status(at: FleetEndToEndTests.nowMs) != nil
            }?.lifetimePurchase)
            let purchase = try await setup.count("SELECT id AS n FROM purchases WHERE transaction_id = '\(lifetime.transactionID)'")
            #expect(purchase > 0, "the worker recorded the one-time purchase")
            let lifetimeOrder = try #require(UInt64(lifetime.transactionID).flatMap(SimulatedOrder.orderID(ofTransactionID:)))
            let bought = try await runFleetCommand(["subscriptions", "show", "--order", lifetimeOrder], environment: environment)
            #expect(bought.status == 0 && bought.output.contains("→ one-time purchase \(purchase)"), "\(bought.output)")
        }
    }

    @Test func anOrderAppleDoesNotKnowOrASandboxPurchasesSaysWhy() async throws {
        try await FleetSetup.withServerAPIKey(receipts: 40) { setup, environment in
            let sandbox = try #require(setup.subscriptions.first { $0.receipt.token.environment == .sandbox }).originalTransactionID
            let sandboxOrder = try #require(UInt64(sandbox).flatMap(SimulatedOrder.orderID(ofTransactionID:)))
            for order in ["MZZZZZZZZZ", sandboxOrder] {
                let shown = try await runFleetCommand(["subscriptions", "show", "--order", order], environment: environment)
                #expect(shown.status != 0 && shown.output.contains("Apple knows no order \(order) of default"), "\(shown.output)")
                #expect(shown.output.contains("production only (Apple has no sandbox for it)"), "\(shown.output)")
            }
            let malformed = try await runFleetCommand(["subscriptions", "show", "--order", "MQ5V-6W7X8"], environment: environment)
            #expect(malformed.status != 0 && malformed.output.contains("Apple refused the order id as malformed"), "\(malformed.output)")
            let both = try await runFleetCommand(["subscriptions", "show", "42", "--order", "MQ5V6W7X8Y"], environment: environment)
            #expect(both.status != 0 && both.output.contains("Give one of: an id, --original-transaction-id, --account, --order."))
        }
    }
}
