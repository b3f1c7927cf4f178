import AccessTokens
import Console
import FleetConfiguration
import Lanes
import Foundation
import Testing

/// `serve` with operator tokens: /console is the ops console's, with its own login, and the API's
/// tokens open neither it nor does its session open the API.
@Suite struct ConsoleMountTests {
    static let operatorToken = "console-operator-token-0123456789"

    @Test func serveMountsTheConsoleBesideTheAPI() async throws {
        let console = try #require(try ConsoleSettings(.given([Settings.consoleTokens: "night-ops:\(Self.operatorToken)"], command: .serve)))
        try await APIHarness.with(console: console) { api in
            let login = try await api.get("/console/login", auth: .none)
            #expect(login.status == 200)
            #expect(login.headers["Content-Type"]?.hasPrefix("text/html") == true)
            #expect(try await api.get("/console", auth: .none).status == 303, "a page without a session goes to the login form")

            // An API token is not an operator token.
            let withAPIToken = try await api.post(
                "/console/login", bytes: Array("token=\(api.token)".utf8), auth: .none, contentType: "application/x-www-form-urlencoded")
            #expect(withAPIToken.status == 401)
            let withOperatorToken = try await api.post(
                "/console/login", bytes: Array("token=\(Self.operatorToken)".utf8), auth: .none,
                contentType: "application/x-www-form-urlencoded")
            #expect(withOperatorToken.status == 303)

            // The API still wants its token.
            #expect(try await api.get("/v1/subscriptions/1", auth: .none).status == 401)
            #expect(try await api.get("/v1/subscriptions/1").status == 404)
        }
    }

    /// serve's lanes and its console read the one clock the process was given: a subscription's
    /// entitlement, in the API's answer and on the console's page, follows it, not the system's.
    @Test func serveReadsOneClockForItsAPIAndItsConsole() async throws {
        let console = try #require(try ConsoleSettings(.given([Settings.consoleTokens: "night-ops:\(Self.operatorToken)"], command: .serve)))
        let clock = DrivenClock()
        try await APIHarness.with(console: console, clock: clock) { api in
            let (_, id) = try await api.registered()
            func entitled() async throws -> Bool? {
                let subscription = try await api.get("/v1/subscriptions/\(id)").json
                return (subscription["entitlement"] as? [String: Any])?["active"] as? Bool
            }
            #expect(try await entitled() == true)
            let login = try await api.post(
                "/console/login", bytes: Array("token=\(Self.operatorToken)".utf8), auth: .none,
                contentType: "application/x-www-form-urlencoded")
            let cookie = try #require(login.headers["Set-Cookie"]?.split(separator: ";").first.map(String.init))
            func shown() async throws -> String {
                String(decoding: try await api.get("/console/subscriptions/\(id)", auth: .cookie(cookie)).body, as: UTF8.self)
            }
            #expect(try await shown().contains(#"<dd id="subscription-entitlement">active"#))

            clock.advance(by: .seconds(100 * 86_400))  // far past the month it was bought for
            #expect(try await entitled() == false, "the API's lanes read the process's clock")
            #expect(try await shown().contains(#"<dd id="subscription-entitlement">none</dd>"#), "so does its console")
        }
    }

    @Test func withoutOperatorTokensThereIsNoConsole() async throws {
        try await APIHarness.with { api in
            let anonymous = try await api.get("/console/login", auth: .none)
            #expect(anonymous.status == 401, "only the API, which wants a token")
            let withToken = try await api.get("/console/login")
            #expect(withToken.status == 404)
        }
    }
}
