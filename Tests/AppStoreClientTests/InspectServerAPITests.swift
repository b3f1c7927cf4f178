import AppStore
import AppStoreClients
import AppStoreSimulator
import Crypto
import Foundation
import HTTPClient
import TestSupport
import Testing

/// `receiptfleet inspect` on the App Store Server API's answers, saved as Apple sent them: the
/// binary prints the same subscription states as for the same customer's verifyReceipt answer,
/// and believes nothing signed under another root.
@Suite struct InspectServerAPITests {
    static let anchorMs: Int64 = 1_795_000_000_000
    static let nowMs = anchorMs + 20 * 86_400_000

    @Test func bothBackendsAnswersReadAsTheSameStates() async throws {
        let receipt = try #require(SimulatedReceipt.fleet(count: 60, seed: 11, anchorMs: Self.anchorMs).first {
            $0.kind == .renewing && $0.token.environment == .production
        })
        let id = try #require(receipt.subscriptions.first).originalTransactionID
        let key = P256.Signing.PrivateKey()
        let setup = ServerAPISimulation(publicKey: key.publicKey, seeds: [11], anchorMs: Self.anchorMs, subscriptions: [60])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("inspect"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (capture, receiptAnswer, root) = (directory.appendingPathComponent("server-api.json"),
                                              directory.appendingPathComponent("verify-receipt.json"), directory.appendingPathComponent("root.pem"))

        try await LiveSimulator.with(startMs: Self.nowMs, serverAPI: setup) { simulator in
            simulator.store.clock.set(nowMs: Self.nowMs, stopped: true)
            let apiKey = try ServerAPIKey(issuerID: "issuer", keyID: "SIMKEY", bundleID: "com.receiptfleet.demo", pem: key.pemRepresentation)
            let (serverAPI, verifyReceipt) = try await onOwnThread {
                let http = try HTTPClient(configuration: HTTPClientConfiguration())
                let headers: HTTPHeaders = ["Authorization": "Bearer " + (try ServerAPITokens(key: apiKey).token())]
                let statuses = try http.get(url: simulator.serverAPIProductionURL + "/inApps/v1/subscriptions/\(id)", headers: headers)
                let history = try http.get(url: simulator.serverAPIProductionURL + "/inApps/v2/history/\(id)", headers: headers)
                let answer = try http.post(url: simulator.productionURL, json: Array(#"{"receipt-data":"\#(receipt.receiptData)"}"#.utf8))
                // Apple's bodies as sent, in the document inspect reads.
                let document = Array(#"{"statuses":"#.utf8) + statuses.body + Array(#","history":["#.utf8) + history.body + Array("]}".utf8)
                return (document, answer.body)
            }
            try Data(serverAPI).write(to: capture)
            try Data(verifyReceipt).write(to: receiptAnswer)
        }
        try (SimulatorSigningChain().rootPEM + "\n").write(to: root, atomically: true, encoding: .utf8)

        let now = ["--now", Date(timeIntervalSince1970: Double(Self.nowMs) / 1000).ISO8601Format()]
        let fromServerAPI = try await runFleetCommand(["inspect", capture.path, "--root", root.path] + now, environment: [:])
        let fromReceipt = try await runFleetCommand(["inspect", receiptAnswer.path] + now, environment: [:])
        #expect(fromServerAPI.status == 0 && fromReceipt.status == 0, "\(fromServerAPI.output)\n\(fromReceipt.output)")
        let (serverAPIStates, receiptStates) = (try Self.states(fromServerAPI.output), try Self.states(fromReceipt.output))
        #expect(!receiptStates.isEmpty && serverAPIStates == receiptStates)

        let untrusted = try await runFleetCommand(["inspect", capture.path] + now, environment: [:])
        #expect(untrusted.status == 1 && untrusted.output.contains("A signed payload cannot be believed"), "\(untrusted.output)")
        #expect(!untrusted.output.contains("\"subscriptions\""), "nothing unverified is shown")
    }

    /// Each subscription's status, product, expiry and auto-renew, by original transaction id, from inspect's JSON.
    static func states(_ output: String) throws -> [String: [String]] {
        let start = try #require(output.firstIndex(of: "{"))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any])
        let subscriptions = document["subscriptions"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: subscriptions.map { subscription in
            let state = subscription["state"] as? [String: Any] ?? [:]
            return ("\(subscription["original_transaction_id"] ?? "")",
                    ["status", "product_id", "expires_at", "auto_renew"].map { "\(state[$0] ?? "-")" })
        })
    }
}
