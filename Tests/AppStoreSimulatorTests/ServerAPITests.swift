import AppStore
@testable import AppStoreSimulator
import Crypto
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// The simulator's App Store Server API: the bearer token as Apple checks it, transaction ids
/// traced back to their receipts, each environment knowing its own purchases, and the history
/// a page at a time.
@Suite struct ServerAPITests {
    static let key = P256.Signing.PrivateKey()
    static let seed: UInt64 = 1

    static func simulator() throws -> SimulatedAppStore {
        try SimulatedAppStore(clock: SimulatorClock(startMs: anchorMs), serverAPI: ServerAPISimulation(
            publicKey: key.publicKey, seeds: [seed], anchorMs: anchorMs))
    }

    static func token(key: P256.Signing.PrivateKey = key, bundleID: String = "com.receiptfleet.demo", issuedAt: Date = Date()) throws -> String {
        try ServerAPIKey(issuerID: "issuer", keyID: "K1", bundleID: bundleID, pem: key.pemRepresentation)
            .token(issuedAt: issuedAt, lifetime: .seconds(1_200))
    }

    static func get(_ client: SimulatorClient, _ uri: String, token: String?) async throws -> SimulatorClient.Answer {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer " + token }
        return try await client.execute(uri: uri, method: .get, headers: headers)
    }

    @Test func transactionIDsLeadBackToTheirReceipt() {
        for kind in LifecycleKind.allCases {
            let receipt = receipt(kind, seed: Self.seed, round: 3)
            for script in receipt.scripts {
                for sequence in [0, 1, 17] {
                    let id = receipt.identifiers.transactionID(chain: script.chain, sequence: sequence)
                    let position = IdentifierScheme.position(ofTransactionID: id, seed: Self.seed)
                    #expect(position?.index == receipt.token.index && position?.chain == script.chain && position?.sequence == sequence)
                }
            }
        }
        #expect(IdentifierScheme.position(ofTransactionID: 42, seed: Self.seed) == nil)
    }

    @Test func onlyATokenAppleWouldTakeIsAnswered() async throws {
        let id = try #require(receipt(.renewing, seed: Self.seed).subscriptions.first).originalTransactionID
        let uri = "/inApps/v1/subscriptions/\(id)"
        let statuses = try await withClient(try Self.simulator()) { client in
            [
                try await Self.get(client, uri, token: try Self.token()).status.code,
                try await Self.get(client, uri, token: nil).status.code,
                try await Self.get(client, uri, token: try Self.token(key: P256.Signing.PrivateKey())).status.code,
                try await Self.get(client, uri, token: try Self.token(bundleID: "com.other.app")).status.code,
                try await Self.get(client, uri, token: try Self.token(issuedAt: Date().addingTimeInterval(-3_600))).status.code,
            ]
        }
        #expect(statuses == [200, 401, 401, 401, 401], "good, none, another key, another app, expired")
    }

    @Test func eachEnvironmentKnowsOnlyItsOwnPurchases() async throws {
        let production = try #require(receipt(.renewing, seed: Self.seed).subscriptions.first).originalTransactionID
        let sandbox = try #require(receipt(.sandbox, seed: Self.seed).subscriptions.first).originalTransactionID
        let deleted = receipt(.deletedAccount, seed: Self.seed)
        let deletedID = deleted.identifiers.transactionID(chain: 0, sequence: 0)
        let answers = try await withClient(try Self.simulator()) { client in
            let token = try Self.token()
            var answers: [String: Int] = [:]
            for (name, path) in [("production here", "/inApps/v1/subscriptions/\(production)"),
                                 ("production in the sandbox", "/sandbox/inApps/v1/subscriptions/\(production)"),
                                 ("sandbox here", "/sandbox/inApps/v1/subscriptions/\(sandbox)"),
                                 ("sandbox in production", "/inApps/v1/subscriptions/\(sandbox)"),
                                 ("a deleted account", "/inApps/v1/subscriptions/\(deletedID)")] {
                let response = try await Self.get(client, path, token: token)
                answers[name] = response.status.code == 200 ? 200 : (jsonObject(response.body)?["errorCode"] as? Int ?? 0)
            }
            return answers
        }
        #expect(answers == ["production here": 200, "production in the sandbox": 4_040_010, "sandbox here": 200,
                            "sandbox in production": 4_040_010, "a deleted account": 4_040_010])
    }

    @Test func theHistoryComesOldestFirstAPageAtATime() async throws {
        // Two years of monthly renewals on the main subscription, and the add-on's beside them.
        let twoGroups = receipt(.twoGroups, seed: Self.seed)
        let id = try #require(twoGroups.subscriptions.first).originalTransactionID
        let simulator = try Self.simulator()
        simulator.clock.set(nowMs: anchorMs + 700 * day, stopped: true)
        let bodies = try await withClient(simulator) { client in
            var bodies: [Data] = []
            var revision: String?
            repeat {
                let query = revision.map { "?revision=\($0)" } ?? ""
                let response = try await Self.get(client, "/inApps/v2/history/\(id)\(query)", token: try Self.token())
                bodies.append(Data(response.body.readableBytesView))
                let page = jsonObject(response.body)
                revision = (page?["hasMore"] as? Bool) == true ? page?["revision"] as? String : nil
            } while revision != nil && bodies.count < 10
            return bodies
        }
        let pages = bodies.compactMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
        let signed = pages.flatMap { $0["signedTransactions"] as? [String] ?? [] }
        let payloads = signed.compactMap { jws -> [String: Any]? in
            let part = String(jws.split(separator: ".")[1])
            var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            return Data(base64Encoded: base64).flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
        }
        #expect(payloads.count == signed.count && !signed.isEmpty)
        #expect(pages.count >= 2, "\(signed.count) transactions: more than one page of \(ServerAPIEndpoint.historyPageSize)")
        #expect(pages.dropLast().allSatisfy { ($0["signedTransactions"] as? [String])?.count == ServerAPIEndpoint.historyPageSize })
        #expect(Set(payloads.compactMap { $0["transactionId"] as? String }).count == payloads.count, "no transaction twice")
        let purchases = payloads.compactMap { $0["purchaseDate"] as? Int64 }
        #expect(purchases == purchases.sorted() && purchases.count == payloads.count)
        #expect(Set(payloads.compactMap { $0["originalTransactionId"] as? String }).count == 2, "both groups' subscriptions")
    }

    /// The rate-limit knob, which verifyReceipt only counts, is enforced here as Apple enforces the
    /// Server API's: past it, 429 with Retry-After and Apple's error body. Ten requests at once
    /// against a limit of one a second: the window is real time, and however slowly a loaded
    /// machine runs them, ten that start together cannot all fall in different seconds.
    @Test func pastTheRateLimitAppleAnswers429() async throws {
        let id = try #require(receipt(.renewing, seed: Self.seed).subscriptions.first).originalTransactionID
        let simulator = try SimulatedAppStore(
            knobs: FaultKnobs(rateLimit: 1), clock: SimulatorClock(startMs: anchorMs),
            serverAPI: ServerAPISimulation(publicKey: Self.key.publicKey, seeds: [Self.seed], anchorMs: anchorMs))
        let token = try Self.token()
        let answers = try await withClient(simulator) { client in
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        let response = try await Self.get(client, "/inApps/v1/subscriptions/\(id)", token: token)
                        let code = jsonObject(response.body)?["errorCode"] as? Int
                        return "\(response.status.code) \(response.headers[.retryAfter] ?? "-") \(code.map(String.init) ?? "-")"
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
        }
        #expect(answers.contains("200 - -"))
        #expect(answers.contains("429 1 4290000"))
        #expect(answers.allSatisfy { $0 == "200 - -" || $0 == "429 1 4290000" }, "\(answers)")
    }
}
