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
        _ server: TestHTTPServer, trusting root: TestCA, key: ServerAPIKey? = nil, knownLatest: String? = "1001",
        refundsDue: Bool = true, onlyIn: AppStoreEnvironment? = nil, now: @escaping @Sendable () -> Date = { Date() },
        leave: @escaping @Sendable (_ call: Int) -> Bool = { _ in true }
    ) async throws -> Verification {
        let key = try key ?? Self.key()
        let endpoints = ServerAPIEndpoints(
            production: "http://127.0.0.1:\(server.port)/production", sandbox: "http://127.0.0.1:\(server.port)/sandbox")
        return try await onOwnThread {
            let client = try ServerAPIClient(
                endpoints: endpoints, tokens: try ServerAPITokens(key: key),
                signatures: SignedPayloadVerifier(trustedRoots: [root.root]), http: HTTPClientConfiguration(totalTimeout: .seconds(5)), now: now)
            var calls = 0
            return client.verify(
                originalTransactionID: "1000", knownLatestTransactionID: knownLatest,
                refunds: RefundCheck(lastRead: refundsDue ? nil : Instant(Date()), everyDays: 7, turn: NightlyTurn(slot: 1)), onlyIn: onlyIn,
                leave: { _ in
                    calls += 1
                    return leave(calls)
                })
        }
    }

    @Test func aVerifiedAnswerIsReadWithTheKeysTokenSent() async throws {
        let ca = try Self.ca.get()
        let server = try TestHTTPServer(.respond([.init(status: 200, body: try Self.statuses(signedBy: ca))]))
        defer { server.stop() }
        let verification = try await Self.ask(server, trusting: ca)
        #expect(verification.outcome == .status(0, isRetryable: nil))
        let response = try #require(verification.response)
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
        let noRefunds = TestHTTPServer.Response(status: 200, body: Array(#"{"revision":"r","hasMore":false,"signedTransactions":[]}"#.utf8))
        let server = try TestHTTPServer(.respond([
            Self.error(404, code: 4_040_010), .init(status: 200, body: try Self.statuses(signedBy: ca)), noRefunds,
        ]))
        defer { server.stop() }
        let verification = try await Self.ask(server, trusting: ca)
        #expect(verification.exchanges.map(\.environment) == [.production, .sandbox, .sandbox])
        #expect(server.requests.map(\.target) == [
            "/production/inApps/v1/subscriptions/1000", "/sandbox/inApps/v1/subscriptions/1000",
            "/sandbox/inApps/v2/history/1000?revoked=true",
        ])
        #expect(verification.exchanges.map(\.outcome) == [.serverAPI(.notFound), .status(0, isRetryable: nil), .status(0, isRetryable: nil)])
        #expect(verification.response != nil)

        let refused = try TestHTTPServer(.respond([Self.error(404, code: 4_040_010)]))
        defer { refused.stop() }
        let alone = try await Self.ask(refused, trusting: ca, leave: { $0 == 1 })
        #expect(alone.exchanges.map(\.outcome) == [.serverAPI(.notFound)], "the redirect needs leave of its own")
        let nowhere = try await Self.ask(refused, trusting: ca)
        #expect(nowhere.exchanges.map(\.outcome) == [.serverAPI(.notFound), .serverAPI(.notFoundAnywhere)])
    }

    /// A re-check of a transaction Apple knew in neither environment asks the one it is given, once.
    @Test func aRecheckOfATransactionKnownNowhereAsksOneEnvironment() async throws {
        let ca = try Self.ca.get()
        let refused = try TestHTTPServer(.respond([Self.error(404, code: 4_040_010)]))
        defer { refused.stop() }
        let recheck = try await Self.ask(refused, trusting: ca, onlyIn: .sandbox)
        #expect(refused.requests.map(\.target) == ["/sandbox/inApps/v1/subscriptions/1000"])
        #expect(recheck.exchanges.map(\.outcome) == [.serverAPI(.notFoundAnywhere)])
        #expect(StatusPolicy().action(for: recheck.outcome, attempt: 1) == .permanent(
            reason: "the App Store knows this transaction in neither environment"), "it stays invalid, not retried")
    }

    /// A signature from another root, or Apple's signature on another app's transaction, proves nothing here.
    @Test func aPayloadFromAnotherRootOrForAnotherAppIsNotBelieved() async throws {
        let ca = try Self.ca.get()
        let stranger = try TestCA(name: "Somebody Else's Root")
        for body in [try Self.statuses(signedBy: stranger), try Self.statuses(signedBy: ca, bundleID: "com.other")] {
            let server = try TestHTTPServer(.respond([.init(status: 200, body: body)]))
            defer { server.stop() }
            let verification = try await Self.ask(server, trusting: ca)
            #expect(verification.outcome == .serverAPI(.untrusted))
            #expect(verification.response == nil, "nothing unverified is passed on")
        }
    }

    /// Payloads are judged at the client's now, the fleet's clock: past the end of the chain that
    /// signed them (2040 for the test's), nothing of the answer is believed.
    @Test func signedAnswersAreJudgedAtTheClientsNow() async throws {
        let ca = try Self.ca.get()
        let server = try TestHTTPServer(.respond([.init(status: 200, body: try Self.statuses(signedBy: ca))]))
        defer { server.stop() }
        let afterTheChain = Date(timeIntervalSince1970: 2_209_075_200)  // 2040-01-02
        let verification = try await Self.ask(server, trusting: ca, now: { afterTheChain })
        #expect(verification.outcome == .serverAPI(.untrusted))
        #expect(verification.response == nil)
    }

    @Test func rateLimitsBadKeysAndFailuresAreToldApart() async throws {
        let ca = try Self.ca.get()
        let cases: [(TestHTTPServer.Response, VerificationOutcome)] = [
            (Self.error(429, code: 4_290_000, headers: [("Retry-After", "30")]), .serverAPI(.rateLimited(retryAfter: .seconds(30)))),
            (Self.error(401, code: 4_010_000), .serverAPI(.unauthorized)),
            (Self.error(500, code: 5_000_001), .serverAPI(.failed(httpStatus: 500, code: 5_000_001, retryable: true))),
            (Self.error(404, code: 4_040_006), .serverAPI(.failed(httpStatus: 404, code: 4_040_006, retryable: true))),
            (Self.error(400, code: 4_000_006), .serverAPI(.failed(httpStatus: 400, code: 4_000_006, retryable: false))),
            (.init(status: 502, body: Array("<html>Bad Gateway</html>".utf8)), .serverAPI(.failed(httpStatus: 502, code: nil, retryable: true))),
            (.init(status: 404, body: Array("<html>Not Found</html>".utf8)), .unreadableBody(httpStatus: 404)),
            (.init(status: 200, body: Array(#"{"data":"#.utf8)), .unreadableBody(httpStatus: 200)),
        ]
        for (answer, expected) in cases {
            let server = try TestHTTPServer(.respond([answer]))
            defer { server.stop() }
            let verification = try await Self.ask(server, trusting: ca)
            #expect(verification.outcome == expected, "HTTP \(answer.status)")
            if expected == .serverAPI(.unauthorized) {
                #expect(verification.exchanges[0].problem?.contains("KEY123") == true, "the alarm names the key id")
            }
        }
    }

    /// When the latest transaction is not the one the fleet knows, the history says what came
    /// between: every page of it, each signed, read with the statuses into one answer.
    @Test func aNewLatestTransactionBringsTheHistoryPageByPageAndAQuietOneItsRefundsWhenDue() async throws {
        let ca = try Self.ca.get()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func transaction(_ id: String, daysAgo: Int64, _ more: [String: Any] = [:]) throws -> String {
            try ca.sign([
                "transactionId": id, "originalTransactionId": "1000", "bundleId": "com.example", "productId": "pro.monthly",
                "purchaseDate": now - daysAgo * 86_400_000, "expiresDate": now - (daysAgo - 30) * 86_400_000, "signedDate": now,
            ].merging(more) { $1 })
        }
        func page(_ transactions: [String], revision: String, hasMore: Bool) throws -> TestHTTPServer.Response {
            .init(status: 200, body: Array(try JSONSerialization.data(withJSONObject: [
                "revision": revision, "hasMore": hasMore, "bundleId": "com.example", "environment": "Sandbox",
                "signedTransactions": transactions,
            ])))
        }
        let server = try TestHTTPServer(.respond([
            .init(status: 200, body: try Self.statuses(signedBy: ca)),
            try page([transaction("998", daysAgo: 61), transaction("999", daysAgo: 31)], revision: "r2", hasMore: true),
            try page([transaction("1001", daysAgo: 1)], revision: "r3", hasMore: false),
        ]))
        defer { server.stop() }
        let verification = try await Self.ask(server, trusting: ca, knownLatest: "999")
        #expect(server.requests.map(\.target) == [
            "/production/inApps/v1/subscriptions/1000", "/production/inApps/v2/history/1000",
            "/production/inApps/v2/history/1000?revision=r2",
        ])
        #expect(verification.outcome == .status(0, isRetryable: nil))
        #expect(Set(try #require(verification.response).latestReceiptInfo.map(\.transactionID)) == ["998", "999", "1001"])

        // Nothing new since the last look: only a refund of an earlier period can have happened,
        // which the statuses never show; the revoked transactions do.
        let refund = try transaction("999", daysAgo: 31, ["revocationDate": now - 86_400_000, "revocationReason": 0])
        let quiet = try TestHTTPServer(.respond([
            .init(status: 200, body: try Self.statuses(signedBy: ca)), try page([refund], revision: "r1", hasMore: false),
        ]))
        defer { quiet.stop() }
        let refunded = try await Self.ask(quiet, trusting: ca, knownLatest: "1001")
        #expect(quiet.requests.map(\.target) == [
            "/production/inApps/v1/subscriptions/1000", "/production/inApps/v2/history/1000?revoked=true",
        ])
        let earlier = try #require(refunded.response?.latestReceiptInfo.first { $0.transactionID == "999" })
        #expect(earlier.cancellationDate != nil && earlier.cancellationReason == 0)
        #expect(refunded.response?.showsEveryRefund == true)

        // On the other nights a quiet subscription costs one call, and its answer says it did not read the refunds.
        let quieter = try TestHTTPServer(.respond([.init(status: 200, body: try Self.statuses(signedBy: ca))]))
        defer { quieter.stop() }
        let statusesOnly = try await Self.ask(quieter, trusting: ca, knownLatest: "1001", refundsDue: false)
        #expect(quieter.requests.map(\.target) == ["/production/inApps/v1/subscriptions/1000"])
        #expect(statusesOnly.outcome == .status(0, isRetryable: nil))
        #expect(statusesOnly.response?.showsEveryRefund == false)

        // A page the fleet gives no leave for leaves the answer unfinished, to be tried again.
        let refused = try TestHTTPServer(.respond([.init(status: 200, body: try Self.statuses(signedBy: ca))]))
        defer { refused.stop() }
        let unfinished = try await Self.ask(refused, trusting: ca, knownLatest: nil, leave: { $0 == 1 })
        #expect(unfinished.outcome == .serverAPI(.unfinished))
        #expect(refused.requests.count == 1)

        // A first call refused as it is about to leave (its time slot passed) is not made at all.
        let late = try await Self.ask(refused, trusting: ca, leave: { _ in false })
        #expect(late.exchanges.map(\.outcome) == [.notSent])
        #expect(refused.requests.count == 1, "nothing more was sent")
    }

    /// Each call's time goes into the verification log; a slow answer must not read as instant.
    @Test func aCallsLatencyIsRecorded() async throws {
        let ca = try Self.ca.get()
        let server = try TestHTTPServer(.delay(.milliseconds(60)))
        defer { server.stop() }
        let verification = try await Self.ask(server, trusting: ca)
        #expect(verification.exchanges.count == 1)
        #expect(verification.lastExchange.latency >= .milliseconds(60))
    }

    @Test func retryAfterIsReadInSecondsOrAsAUnixTimeInMilliseconds() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(ServerAPIClient.retryAfter("30", now: now) == .seconds(30))
        #expect(ServerAPIClient.retryAfter("1700000012000", now: now) == .seconds(12))
        #expect(ServerAPIClient.retryAfter("soon", now: now) == nil)
        #expect(ServerAPIClient.retryAfter(nil, now: now) == nil)
    }
}
