import AppStore
import AppStoreClients
import Crypto
import Foundation
import HTTPClient
import TestSupport
import Testing

/// The Server API client against a real HTTP server answering as Apple does, signed by a test
/// certificate authority shaped like Apple's: what it sends (the bearer token, the path) and how
/// it reads each kind of answer.
@Suite struct ServerAPIClientTests {
    static let ca = Result { try TestCA() }
    static let signingKey = P256.Signing.PrivateKey()

    static func key(bundleID: String = "com.example") throws -> ServerAPIKey {
        try ServerAPIKey(issuerID: "issuer-1", keyID: "KEY123", bundleID: bundleID, pem: signingKey.pemRepresentation)
    }

    /// A Get All Subscription Statuses body for subscription 1000, signed by `ca` for `bundleID`.
    static func statuses(signedBy ca: TestCA, bundleID: String = "com.example") throws -> [UInt8] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let transaction = try ca.sign([
            "transactionId": "1001", "originalTransactionId": "1000", "bundleId": bundleID, "productId": "pro.monthly",
            "purchaseDate": now - 86_400_000, "originalPurchaseDate": now - 86_400_000, "expiresDate": now + 29 * 86_400_000,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "environment": "Sandbox", "signedDate": now,
        ])
        let renewal = try ca.sign([
            "originalTransactionId": "1000", "productId": "pro.monthly", "autoRenewProductId": "pro.monthly", "autoRenewStatus": 1,
            "environment": "Sandbox", "signedDate": now,
        ])
        let body: [String: Any] = [
            "environment": "Sandbox", "bundleId": bundleID, "data": [[
                "subscriptionGroupIdentifier": "g1",
                "lastTransactions": [["status": 1, "originalTransactionId": "1000", "signedTransactionInfo": transaction,
                                      "signedRenewalInfo": renewal]],
            ]],
        ]
        return Array(try JSONSerialization.data(withJSONObject: body))
    }

    static func error(_ status: Int, code: Int, headers: [(name: String, value: String)] = []) -> TestHTTPServer.Response {
        .init(status: status, headers: headers + [("Content-Type", "application/json")],
              body: Array(#"{"errorCode":\#(code),"errorMessage":"test"}"#.utf8))
    }

    /// Asks the server about subscription 1000 as a worker would, trusting `trusting`.
    static func ask(
        _ server: TestHTTPServer, trusting root: TestCA, key: ServerAPIKey? = nil, mayRedirect: @escaping @Sendable () -> Bool = { true }
    ) async throws -> [ServerAPIExchange] {
        let key = try key ?? Self.key()
        let endpoints = ServerAPIEndpoints(
            production: "http://127.0.0.1:\(server.port)/production", sandbox: "http://127.0.0.1:\(server.port)/sandbox")
        return try await onOwnThread {
            let client = try ServerAPIClient(
                endpoints: endpoints, tokens: try ServerAPITokens(key: key),
                signatures: SignedPayloadVerifier(trustedRoots: [root.root]), http: HTTPClientConfiguration(totalTimeout: .seconds(5)))
            return client.statuses(of: "1000", mayRedirect: mayRedirect)
        }
    }

    @Test func aVerifiedAnswerIsReadWithTheKeysTokenSent() async throws {
        let ca = try Self.ca.get()
        let server = try TestHTTPServer(.respond([.init(status: 200, body: try Self.statuses(signedBy: ca))]))
        defer { server.stop() }
        let exchanges = try await Self.ask(server, trusting: ca)
        guard case .answered(let response) = try #require(exchanges.first).outcome else {
            Issue.record("not answered: \(exchanges)")
            return
        }
        #expect(response.latestReceiptInfo.map(\.transactionID) == ["1001"])
        #expect(response.pendingRenewalInfo.first?.autoRenewStatus == true)
        #expect(response.environment == .sandbox)
        let request = try #require(server.requests.first)
        #expect(request.method == "GET")
        #expect(request.target == "/production/inApps/v1/subscriptions/1000")
        let token = try #require(request.headers["authorization"]?.split(separator: " ").last.map(String.init))
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Data(base64URL: parts[2])))
        #expect(Self.signingKey.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        let claimBytes = try #require(Data(base64URL: parts[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: claimBytes) as? [String: Any])
        #expect(claims["bid"] as? String == "com.example")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
    }

    @Test func aTransactionProductionDoesNotKnowIsAskedOfTheSandbox() async throws {
        let ca = try Self.ca.get()
        let server = try TestHTTPServer(.respond([Self.error(404, code: 4_040_010), .init(status: 200, body: try Self.statuses(signedBy: ca))]))
        defer { server.stop() }
        let exchanges = try await Self.ask(server, trusting: ca)
        #expect(exchanges.map(\.environment) == [.production, .sandbox])
        #expect(server.requests.map(\.target) == ["/production/inApps/v1/subscriptions/1000", "/sandbox/inApps/v1/subscriptions/1000"])
        guard case .notFound = exchanges[0].outcome, case .answered = exchanges[1].outcome else {
            Issue.record("\(exchanges.map(\.outcome))")
            return
        }

        let refused = try TestHTTPServer(.respond([Self.error(404, code: 4_040_010)]))
        defer { refused.stop() }
        let alone = try await Self.ask(refused, trusting: ca, mayRedirect: { false })
        #expect(alone.count == 1, "the redirect needs leave of its own")
    }

    /// A signature from another root, or Apple's signature on another app's transaction, proves nothing here.
    @Test func aPayloadFromAnotherRootOrForAnotherAppIsNotBelieved() async throws {
        let ca = try Self.ca.get()
        let stranger = try TestCA(name: "Somebody Else's Root")
        for body in [try Self.statuses(signedBy: stranger), try Self.statuses(signedBy: ca, bundleID: "com.other")] {
            let server = try TestHTTPServer(.respond([.init(status: 200, body: body)]))
            defer { server.stop() }
            let exchanges = try await Self.ask(server, trusting: ca)
            guard case .untrusted = try #require(exchanges.first).outcome else {
                Issue.record("believed: \(exchanges.map(\.outcome))")
                continue
            }
        }
    }

    @Test func rateLimitsBadKeysAndFailuresAreToldApart() async throws {
        let ca = try Self.ca.get()
        let cases: [(TestHTTPServer.Response, String)] = [
            (Self.error(429, code: 4_290_000, headers: [("Retry-After", "30")]), "rateLimited 30.0 seconds"),
            (Self.error(401, code: 4_010_000), "unauthorized"),
            (Self.error(500, code: 5_000_001), "failed retryable"),
            (Self.error(404, code: 4_040_006), "failed retryable"),
            (Self.error(400, code: 4_000_006), "failed final"),
            (.init(status: 502, body: Array("<html>Bad Gateway</html>".utf8)), "failed retryable"),
            (.init(status: 200, body: Array(#"{"data":"#.utf8)), "unreadable"),
        ]
        for (answer, expected) in cases {
            let server = try TestHTTPServer(.respond([answer]))
            defer { server.stop() }
            let outcome = try #require(try await Self.ask(server, trusting: ca).first).outcome
            let read = switch outcome {
            case .rateLimited(let wait?): "rateLimited \(wait)"
            case .unauthorized: "unauthorized"
            case .failed(_, _, let retryable): retryable ? "failed retryable" : "failed final"
            case .unreadableBody: "unreadable"
            default: "\(outcome)"
            }
            #expect(read == expected, "HTTP \(answer.status)")
        }
    }

    @Test func retryAfterIsReadInSecondsOrAsAUnixTimeInMilliseconds() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(ServerAPIClient.retryAfter("30", now: now) == .seconds(30))
        #expect(ServerAPIClient.retryAfter("1700000012000", now: now) == .seconds(12))
        #expect(ServerAPIClient.retryAfter("soon", now: now) == nil)
        #expect(ServerAPIClient.retryAfter(nil, now: now) == nil)
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
