import AppStore
import AppStoreClients
import AppStoreSimulator
import Crypto
import Foundation
import HTTPClient
import TestSupport
import Testing

/// Get Notification History as the simulator speaks it and the client reads it: Apple's pages of
/// 20, oldest first, each payload signed by the chain; its window rules and error codes.
@Suite struct NotificationHistoryTests {
    static let anchorMs: Int64 = 1_795_000_000_000
    static let day: Int64 = 86_400_000

    static func withClient<T: Sendable>(_ body: @escaping @Sendable (ServerAPIClient, SignedPayloadVerifier) throws -> T) async throws -> T {
        let key = P256.Signing.PrivateKey()
        let setup = ServerAPISimulation(publicKey: key.publicKey, seeds: [11], anchorMs: anchorMs, subscriptions: [60])
        return try await LiveSimulator.with(startMs: anchorMs + 20 * day, serverAPI: setup) { simulator in
            let endpoints = ServerAPIEndpoints(production: simulator.serverAPIProductionURL, sandbox: simulator.serverAPISandboxURL)
            let apiKey = try ServerAPIKey(issuerID: "issuer", keyID: "SIMKEY", bundleID: "com.receiptfleet.demo", pem: key.pemRepresentation)
            let verifier = SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root])
            return try await onOwnThread {
                try body(ServerAPIClient(endpoints: endpoints, tokens: try ServerAPITokens(key: apiKey), signatures: verifier,
                                         http: HTTPClientConfiguration(), now: { Date() }), verifier)
            }
        }
    }

    @Test func theHistoryComesInPagesOfTwentyOldestFirstEachSignedAndOnce() async throws {
        let (pages, payloads) = try await Self.withClient { client, _ in
            let (start, end) = (Date(timeIntervalSince1970: Double(Self.anchorMs - 30 * Self.day) / 1000),
                                Date(timeIntervalSince1970: Double(Self.anchorMs + 20 * Self.day) / 1000))
            var pages: [Int] = []
            var payloads: [String] = []
            var token: String?
            repeat {
                let page = try client.notificationHistory(in: .production, from: start, until: end, onlyFailures: false, after: token)
                pages.append(page.notifications.count)
                payloads += page.notifications.map(\.signedPayload)
                token = page.hasMore ? page.paginationToken : nil
            } while token != nil
            return (pages, payloads)
        }
        #expect(pages.count >= 2 && pages.dropLast().allSatisfy { $0 == 20 } && pages.last! <= 20, "\(pages)")
        let verifier = SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root])
        var seen: [(type: String, uuid: String, signed: Int64)] = []
        for payload in payloads {
            let fields = try #require(try JSONValue.parse(await verifier.payload(of: payload, at: Date())).members)
            let data = try #require(fields["data"]?.members)
            #expect(data.text("bundleId") == "com.receiptfleet.demo" && data.text("environment") == "Production")
            _ = try await verifier.payload(of: try #require(data.text("signedTransactionInfo")), at: Date())
            seen.append((try #require(fields.text("notificationType")), try #require(fields.text("notificationUUID")),
                         try #require(fields["signedDate"].flatMap { if case .integer(let n) = $0 { n } else { nil } })))
        }
        #expect(Set(seen.map(\.uuid)).count == seen.count, "each notification once")
        #expect(seen.map(\.signed) == seen.map(\.signed).sorted(), "oldest first")
        #expect(seen.allSatisfy { ($0.signed >= Self.anchorMs - 30 * Self.day) && $0.signed < Self.anchorMs + 20 * Self.day })
        let types = Set(seen.map(\.type))
        #expect(types.isSuperset(of: ["SUBSCRIBED", "DID_RENEW", "EXPIRED"]), "\(types)")
    }

    @Test func windowsAppleRefusesAnswerItsErrorCodes() async throws {
        let refusals = try await Self.withClient { client, _ in
            let now = Date(timeIntervalSince1970: Double(Self.anchorMs + 20 * Self.day) / 1000)
            func refusal(_ start: Date, _ end: Date, token: String? = nil) -> String {
                do {
                    _ = try client.notificationHistory(in: .production, from: start, until: end, onlyFailures: false, after: token)
                    return "answered"
                } catch {
                    return error.description
                }
            }
            return [
                refusal(now.addingTimeInterval(-181 * 86_400), now),
                refusal(now, now.addingTimeInterval(-3_600)),
                refusal(now.addingTimeInterval(-3_600), now, token: "not-a-token"),
            ]
        }
        #expect(refusals[0].contains("4000012"), "more than 180 days back: \(refusals[0])")
        #expect(refusals[1].contains("4000013"), "start after end: \(refusals[1])")
        #expect(refusals[2].contains("4000014"), "a token Apple never gave: \(refusals[2])")
    }
}
