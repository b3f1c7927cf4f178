import AccessTokens
import APIService
import Foundation
import Testing

/// Bearer tokens on everything but Apple's endpoint, body limits, per-client rate limits, and
/// errors as JSON {code, message}.
@Suite struct ProtectionTests {
    @Test func aMissingOrWrongBearerTokenIsRefused() async throws {
        try await APIHarness.with { api in
            for auth in [APIHarness.Auth.none, .bearer("guessed-token-guessed-token"), .bearer(api.token + "x")] {
                let reply = try await api.get("/v1/subscriptions?account_id=a", auth: auth)
                #expect(reply.status == 401)
                #expect(reply.code == "unauthorized")
                #expect(reply.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
                #expect(!String(decoding: reply.body, as: UTF8.self).contains(api.token))
            }
            #expect(try await api.post("/v1/receipts", ["receipt": "AAAA"], auth: .none).status == 401)
            #expect(try await api.get("/v1/subscriptions?account_id=a").status == 200)
            #expect(api.counter("receiptfleet_api_rejected_requests_total", [("reason", "unauthorized")]) == 4)
        }
    }

    @Test func aBodyOverTheLimitIs413() async throws {
        try await APIHarness.with(configure: { $0.maxBodyBytes = 4_096 }) { api in
            let big = try await api.post("/v1/receipts", ["receipt": String(repeating: "A", count: 8_000)])
            #expect(big.status == 413)
            #expect(big.code == "body_too_large")
            let bigNotification = try await api.post("/v1/notifications/apple", ["signedPayload": String(repeating: "A", count: 8_000)], auth: .none)
            #expect(bigNotification.status == 413)
        }
    }

    @Test func aClientOverItsRateIs429() async throws {
        // One request per 100 s after a burst of 2: the third in a row is refused, however slow the machine.
        try await APIHarness.with(configure: { $0.clientRateLimit = 0.01; $0.clientRateBurst = 2 }) { api in
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(try await api.get("/v1/subscriptions?account_id=a").status) }
            #expect(statuses == [200, 200, 429])
            let limited = try await api.get("/v1/subscriptions?account_id=a")
            #expect(limited.code == "rate_limited")
            #expect(Int(limited.headers["Retry-After"] ?? "") ?? 0 >= 1)
        }
    }

    /// Garbage and oversized bodies on the notification route are charged to the sender's address,
    /// as forgeries are: after the burst, 429.
    @Test func malformedAndOversizedNotificationsAreChargedToTheSender() async throws {
        try await APIHarness.with(configure: { $0.clientRateLimit = 0.01; $0.clientRateBurst = 2; $0.maxBodyBytes = 4_096 }) { api in
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(try await api.post("/v1/notifications/apple", ["x": 1], auth: .none).status) }
            #expect(statuses == [400, 400, 429])
            let big = try await api.post("/v1/notifications/apple", ["signedPayload": String(repeating: "A", count: 8_000)], auth: .none)
            #expect(big.status == 429)
        }
        try await APIHarness.with(configure: { $0.clientRateLimit = 0.01; $0.clientRateBurst = 2; $0.maxBodyBytes = 4_096 }) { api in
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(try await api.post("/v1/notifications/apple", ["signedPayload": String(repeating: "A", count: 8_000)], auth: .none).status)
            }
            #expect(statuses == [413, 413, 429])
        }
    }

    /// A token written with scopes calls only the routes of those scopes (403 elsewhere, before
    /// anything is asked or stored); one written without may call every route, as before.
    @Test func aTokenWithScopesCallsOnlyTheirRoutes() async throws {
        let (reader, registrar, support) = ("reader-0123456789abcdef", "registrar-0123456789abcdef", "support-0123456789abcdef")
        try await APIHarness.with(configure: { settings in
            settings.tokens = try! NamedTokens(
                parsing: "tester:\(Self.unscoped),analytics(read):\(reader),backend(register+read):\(registrar),support(refund-consent):\(support)",
                scopes: APIScope.names)
        }) { api in
            let read = try await api.get("/v1/subscriptions?account_id=a", auth: .bearer(reader))
            #expect(read.status == 200)
            let register = try await api.post("/v1/receipts", ["receipt": api.receipt().receiptData], auth: .bearer(reader))
            #expect(register.status == 403 && register.code == "insufficient_scope", "\(register.json)")
            let delete = try await api.delete("/v1/accounts/a", auth: .bearer(registrar))
            #expect(delete.status == 403 && delete.code == "insufficient_scope")
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 0, "refused before anything was stored")
            #expect(try await api.put("/v1/accounts/a/refund-consent", auth: .bearer(registrar)).code == "insufficient_scope")
            #expect(try await api.delete("/v1/accounts/a/refund-consent", auth: .bearer(reader)).code == "insufficient_scope")
            #expect(try await api.count("SELECT count(*) AS n FROM refund_consents") == 0, "refused before anything was stored")
            #expect(try await api.put("/v1/accounts/a/refund-consent", auth: .bearer(support)).status == 200)
            #expect(try await api.delete("/v1/accounts/a/refund-consent", auth: .bearer(support)).status == 200)
            #expect(try await api.count("SELECT count(*) AS n FROM refund_consents WHERE account_id = 'a' AND NOT consented") == 1)
            #expect(try await api.post("/v1/receipts", ["receipt": api.receipt().receiptData], auth: .bearer(registrar)).status == 200)
            #expect(try await api.delete("/v1/accounts/a", auth: .bearer(Self.unscoped)).status == 200, "no scopes: every route")
        }
        #expect(throws: NamedTokensError.self) { try NamedTokens(parsing: "a(write):\(reader)", scopes: APIScope.names) }
        #expect(throws: NamedTokensError.self) { try NamedTokens(parsing: "a(read):\(reader)", kind: "console tokens") }
    }

    static let unscoped = "unscoped-0123456789abcdef"

    @Test func unknownRoutesAndBadQueriesAnswerJSON() async throws {
        try await APIHarness.with { api in
            let missing = try await api.get("/v1/nothing-here")
            #expect(missing.status == 404)
            #expect(missing.code == "not_found")
            #expect(try await api.get("/v1/subscriptions").code == "invalid_query")
            #expect(try await api.get("/v1/subscriptions/abc").code == "invalid_id")
        }
    }

    @Test func tokensAreCheckedWhenConfigured() throws {
        #expect(throws: NamedTokensError.self) { try NamedTokens(parsing: "backend:short") }
        #expect(throws: NamedTokensError.self) { try NamedTokens(parsing: "no-colon-here-at-all-0123456789") }
        let tokens = try NamedTokens(parsing: "backend:0123456789abcdef0123,support:fedcba9876543210fedc")
        #expect(tokens.client(presenting: "fedcba9876543210fedc") == "support")
        #expect(tokens.client(presenting: "0123456789abcdef012") == nil)
        #expect(!"\(tokens)".contains("0123456789abcdef"))
    }

    /// A client's token rotates with an overlap: its old and its new token both work while both are listed.
    @Test func aNameWithTwoTokensIsARotation() throws {
        let (old, new) = ("backend-old-0123456789abcdef", "backend-new-fedcba9876543210")
        let tokens = try NamedTokens(parsing: "backend:\(old),support:support-0123456789abcdef,backend:\(new)")
        #expect(tokens.client(presenting: old) == "backend" && tokens.client(presenting: new) == "backend")
        #expect(tokens.names == ["backend", "support"] && tokens.rotating == ["backend"])
        #expect(throws: NamedTokensError.self) { try NamedTokens(parsing: "backend:\(old),backend:\(new),backend:backend-third-0123456789") }
        #expect(throws: NamedTokensError.self) { try NamedTokens(parsing: "backend:\(old),support:\(old)") }
        let after = try NamedTokens(parsing: "backend:\(new),support:support-0123456789abcdef")
        #expect(after.client(presenting: old) == nil && after.client(presenting: new) == "backend")
    }
}
