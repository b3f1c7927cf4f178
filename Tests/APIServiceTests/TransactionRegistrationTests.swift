import AppStore
import AppStoreSimulator
import Foundation
import Testing
import TestSupport

/// POST /v1/transactions: a StoreKit 2 purchase (no receipt) registered by its signed transaction
/// or its id, verified with the simulator's App Store Server API at once, stored on that backend.
@Suite struct TransactionRegistrationTests {
    /// A signed transaction of the app, as the device holds it (`Transaction.jwsRepresentation`),
    /// signed by `chain` (the simulator's, which the fleet trusts in tests, unless another).
    static func signedTransaction(
        originalTransactionID: String, bundleID: String = ServerAPISimulation.bundleID, chain: SimulatorSigningChain
    ) throws -> String {
        let payload: [String: Any] = [
            "transactionId": originalTransactionID, "originalTransactionId": originalTransactionID, "bundleId": bundleID,
            "productId": "com.receiptfleet.demo.pro.monthly", "environment": "Production",
            "purchaseDate": APIHarness.nowMs, "signedDate": APIHarness.nowMs, "type": "Auto-Renewable Subscription",
        ]
        return chain.sign(Array(try JSONSerialization.data(withJSONObject: payload)))
    }

    @Test func aSignedTransactionIsVerifiedStoredOnTheServerAPIAndLinked() async throws {
        try await APIHarness.with(serverAPI: true) { api in
            let otid = api.receipt().subscriptions[0].originalTransactionID
            let jws = try Self.signedTransaction(originalTransactionID: otid, chain: SimulatorSigningChain())
            let registered = try await api.post("/v1/transactions", ["signed_transaction": jws, "account_id": "acct-sk2"])
            #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(registered.json["verification"] as? String == "verified")
            let items = try #require(registered.json["subscriptions"] as? [[String: Any]])
            let subscription = try #require(items.first?["subscription"] as? [String: Any])
            #expect(items.count == 1 && items.first?["account"] as? String == "linked" && items.first?["created"] as? Bool == true)
            #expect(subscription["original_transaction_id"] as? String == otid)
            #expect(subscription["status"] as? String == "active")
            let byAccount = try await api.get("/v1/subscriptions?account_id=acct-sk2")
            #expect((byAccount.json["subscriptions"] as? [[String: Any]])?.count == 1)

            // No receipt: the subscription stays on the Server API, which answered this attempt.
            #expect(try await api.count("SELECT count(*) AS n FROM receipts") == 0)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE backend = 'server_api'") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM verifications WHERE backend = 'server_api' AND run_id = 'registration'") == 1)

            // The same purchase again, by its id: updated, never duplicated.
            let again = try await api.post("/v1/transactions", ["transaction_id": otid])
            #expect(again.status == 200 && (again.json["subscriptions"] as? [[String: Any]])?.first?["created"] as? Bool == false)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 1)
        }
    }

    @Test func aTransactionThatProvesNothingOrIsNotApplesIsRefused() async throws {
        try await APIHarness.with(serverAPI: true) { api in
            let otid = api.receipt().subscriptions[0].originalTransactionID
            let chain = try SimulatorSigningChain()
            let cases: [([String: Any], Int, String)] = [
                (["transaction_id": otid, "account_id": "acct"], 400, "account_needs_signed_transaction"),
                (["transaction_id": otid, "signed_transaction": try Self.signedTransaction(originalTransactionID: otid, chain: chain)],
                 400, "one_transaction"),
                ([:], 400, "one_transaction"),
                (["transaction_id": "12ab"], 400, "invalid_transaction_id"),
                (["signed_transaction": try Self.signedTransaction(
                    originalTransactionID: otid, chain: SimulatorSigningChain(name: "Somebody Else's Root"))],
                 422, "invalid_signed_transaction"),
                (["signed_transaction": try Self.signedTransaction(originalTransactionID: otid, bundleID: "com.other", chain: chain)],
                 422, "invalid_signed_transaction"),
                // Apple knows no such transaction in either environment.
                (["transaction_id": "9"], 422, "transaction_rejected"),
            ]
            for (body, status, code) in cases {
                let reply = try await api.post("/v1/transactions", body)
                #expect(reply.status == status && reply.code == code, "\(body.keys.sorted()): \(String(decoding: reply.body, as: UTF8.self))")
            }
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 0)
        }
    }

    @Test func withoutAServerAPIKeyTheRouteSaysSo() async throws {
        try await APIHarness.with { api in
            let reply = try await api.post("/v1/transactions", ["transaction_id": "1000000000000001"])
            #expect(reply.status == 501 && reply.code == "server_api_not_configured")
        }
    }
}
