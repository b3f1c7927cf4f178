import AppStoreSimulator
import Foundation
import HTTPTypes
import NIOCore
import Testing

@Suite("verifyReceipt status codes")
struct StatusTests {
    @Test("sandbox receipts: 21007 from production, status 0 from the sandbox with 5-minute months")
    func sandbox() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let sandboxReceipt = receipt(.sandbox)
            let production = try await verify(client, sandboxReceipt.receiptData, sandbox: false)
            #expect(production.status == .ok)
            #expect(String(buffer: production.body) == #"{"status":21007}"#)

            let json = try await verifyJSON(client, sandboxReceipt)
            #expect(json["status"] as? Int == 0)
            #expect(json["environment"] as? String == "Sandbox")
            for entry in json.latestEntries {
                #expect(entry.number("expires_date_ms")! - entry.number("purchase_date_ms")! == 300_000)
            }
            // Sandbox subscriptions stop after six renewals.
            try await setClock(client, to: anchorMs + 3_600_000)
            let later = try await verifyJSON(client, sandboxReceipt)
            #expect(later.latestEntries.count == 7)
            #expect(later.renewals[0].text("expiration_intent") == "1")
        }
    }

    @Test("production receipts get 21008 from the sandbox")
    func productionToSandbox() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let response = try await verify(client, receipt(.renewing).receiptData, sandbox: true)
            #expect(String(buffer: response.body) == #"{"status":21008}"#)
        }
    }

    @Test("malformed receipts get 21002, deleted accounts 21010, unreadable requests 21000")
    func failures() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            let cases: [(String, String)] = [
                (receipt(.malformed).receiptData, #"{"status":21002}"#),
                ("bm90IGEgcmVjZWlwdA==", #"{"status":21002}"#),
                ("%%% not base64 %%%", #"{"status":21002}"#),
                (receipt(.deletedAccount).receiptData, #"{"status":21010}"#),
            ]
            for (receiptData, expected) in cases {
                let response = try await verify(client, receiptData)
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == expected)
            }
            let notJSON = try await client.execute(uri: "/verifyReceipt", method: .post, body: ByteBuffer(string: "receipt=1"))
            #expect(String(buffer: notJSON.body) == #"{"status":21000}"#)
            let get = try await client.execute(uri: "/verifyReceipt", method: .get)
            #expect(String(buffer: get.body) == #"{"status":21000}"#)
            #expect(try await fetchStats(client).byStatus == ["21002": 3, "21010": 1, "21000": 1])
        }
    }

    @Test("a wrong or missing password gets 21004 when a shared secret is configured")
    func sharedSecret() async throws {
        let simulator = try makeSimulator(FaultKnobs(sharedSecret: "correct-horse"))
        try await withClient(simulator) { client in
            let renewing = receipt(.renewing).receiptData
            #expect(String(buffer: try await verify(client, renewing, password: "wrong").body) == #"{"status":21004}"#)
            #expect(String(buffer: try await verify(client, renewing).body) == #"{"status":21004}"#)
            #expect(jsonObject(try await verify(client, renewing, password: "correct-horse").body)?["status"] as? Int == 0)
            // The knobs report whether a secret is set, never the secret.
            let knobs = try await client.execute(uri: "/control/knobs", method: .get)
            #expect(!String(buffer: knobs.body).contains("correct-horse"))
            #expect(jsonObject(knobs.body)?["shared_secret_set"] as? Bool == true)
            // Cleared at run time, any password is accepted.
            try await control(client, "/control/knobs", #"{"shared_secret": ""}"#)
            #expect(jsonObject(try await verify(client, renewing, password: "anything").body)?["status"] as? Int == 0)
        }
    }

    @Test("latest_receipt is a newer receipt for the same subscriptions, holding every transaction")
    func latestReceipt() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            try await setClock(client, to: anchorMs + 90 * day)
            let original = try await verifyJSON(client, receipt(.renewing))
            let latestData = try #require(original.text("latest_receipt"))
            #expect(latestData != receipt(.renewing).receiptData)
            let latest = try #require(SimulatedReceipt(receiptData: latestData))
            let answer = try await verifyJSON(client, latest)
            let inApp = { (json: [String: Any]) in (json["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]] ?? [] }
            #expect(inApp(original).count == 1, "the original receipt holds only the first purchase")
            #expect(inApp(answer).count == original.latestEntries.count)
            #expect(answer.renewals[0].text("original_transaction_id") == original.renewals[0].text("original_transaction_id"))
        }
    }

    @Test("transaction ids are unique across a fleet and not in purchase order")
    func identifiers() async throws {
        let simulator = try makeSimulator()
        try await withClient(simulator) { client in
            try await setClock(client, to: anchorMs + 90 * day)
            var ids: [String] = []
            var receiptsOutOfOrder = 0
            for receipt in SimulatedReceipt.fleet(count: 70, seed: 3, anchorMs: anchorMs) where receipt.kind.environment == .production
                && receipt.kind != .malformed && receipt.kind != .deletedAccount {
                let entries = try await verifyJSON(client, receipt).latestEntries
                ids += entries.compactMap { $0.text("transaction_id") }
                let byPurchase = entries.sorted { $0.number("purchase_date_ms")! < $1.number("purchase_date_ms")! }
                let purchaseOrder = byPurchase.compactMap { $0.number("transaction_id") }
                if purchaseOrder != purchaseOrder.sorted() { receiptsOutOfOrder += 1 }
            }
            #expect(Set(ids).count == ids.count, "no transaction id repeats across the fleet")
            #expect(ids.allSatisfy { $0.count == 15 && $0.hasPrefix("1") })
            #expect(receiptsOutOfOrder > 30, "ids must not reveal purchase order")
        }
    }
}
