import AppStore
import AppStoreClients
import AppStoreSimulator
import Crypto
import Foundation
import HTTPClient
import TestSupport
import Testing

/// Send Consumption Information as the simulator speaks it and the client sends it: 202 for an
/// answer Apple takes (which the simulator keeps), Apple's error bodies for what it refuses, 401
/// for a token it does not take, 429 with Retry-After past its rate (issue 30, part 3).
@Suite struct ConsumptionInformationTests {
    static let anchorMs = RenewalExtensionTests.anchorMs
    static let nowMs = RenewalExtensionTests.nowMs

    /// A client for the simulator's Server API (with `knobs`), signing with `signingKey` (nil: the
    /// key the simulator trusts), and what the simulator received.
    static func withClient<T: Sendable>(
        knobs: FaultKnobs = FaultKnobs(), signingKey: P256.Signing.PrivateKey? = nil,
        _ body: @escaping @Sendable (ServerAPIClient, ServerAPITokens, HTTPClientConfiguration, String) throws -> T
    ) async throws -> (T, [ReceivedConsumption.Answer]) {
        let key = P256.Signing.PrivateKey()
        let setup = ServerAPISimulation(publicKey: key.publicKey, seeds: [11], anchorMs: anchorMs, subscriptions: [60])
        let result = try await LiveSimulator.with(knobs: knobs, startMs: nowMs, serverAPI: setup) { simulator in
            simulator.store.clock.set(nowMs: nowMs, stopped: true)
            let endpoints = ServerAPIEndpoints(production: simulator.serverAPIProductionURL, sandbox: simulator.serverAPISandboxURL)
            let apiKey = try ServerAPIKey(
                issuerID: "issuer", keyID: "SIMKEY", bundleID: "com.receiptfleet.demo", pem: (signingKey ?? key).pemRepresentation)
            let verifier = SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root])
            return try await onOwnThread {
                let tokens = try ServerAPITokens(key: apiKey)
                return try body(ServerAPIClient(endpoints: endpoints, tokens: tokens, signatures: verifier, http: HTTPClientConfiguration(), now: { Date() }),
                         tokens, HTTPClientConfiguration(), simulator.serverAPIProductionURL)
            }
        }
        return (result, setup.consumption.all)
    }

    static func refusal(_ call: () throws -> Void) -> ServerAPICallError? {
        do {
            try call()
            return nil
        } catch {
            return error as? ServerAPICallError
        }
    }

    static let answer = ConsumptionAnswer(deliveryStatus: .delivered, sampleContentProvided: true, refundPreference: .decline)

    @Test func anAnswerIsTakenWith202AndTheSimulatorKeepsWhatItWasTold() async throws {
        let refunded = try #require(RenewalExtensionTests.truths(.refunded, .refunded).first)
        let (refused, received) = try await Self.withClient { client, _, _, _ in
            try client.sendConsumptionInformation(transactionID: refunded.originalTransactionID, Self.answer, in: .production)
            return Self.refusal {
                try client.sendConsumptionInformation(transactionID: refunded.originalTransactionID, Self.answer, in: .sandbox)
            }
        }
        #expect(received.count == 1, "\(received)")
        let taken = try #require(received.first)
        #expect(taken.app == "com.receiptfleet.demo" && taken.transactionID == refunded.originalTransactionID && taken.environment == "Production")
        #expect(taken.deliveryStatus == "DELIVERED" && taken.sampleContentProvided && taken.refundPreference == "DECLINE")
        #expect(taken.consumptionPercentage == nil && taken.atMs == Self.nowMs)
        #expect(refused?.code == 4_040_010, "the sandbox does not know a production transaction")
    }

    @Test func appleRefusesWhatItsRulesRefuseWithItsCodes() async throws {
        let active = try #require(RenewalExtensionTests.truths(.renewing, .active).first)
        let family = try #require(RenewalExtensionTests.truths(.familyShared, .active).first)
        let ((codes, replies), received) = try await Self.withClient { client, tokens, http, base in
            func send(_ id: String, _ answer: ConsumptionAnswer = Self.answer) -> Int? {
                Self.refusal { try client.sendConsumptionInformation(transactionID: id, answer, in: .production) }?.code
            }
            // Bodies the client never sends, as another client might.
            let raw = try HTTPClient(configuration: http)
            func put(_ body: String) throws -> (Int, String) {
                let reply = try raw.put(
                    url: base + "/inApps/v2/transactions/consumption/" + active.originalTransactionID, json: Array(body.utf8),
                    headers: ["Authorization": "Bearer " + tokens.token()])
                return (reply.status, String(decoding: reply.body, as: UTF8.self))
            }
            let percentage = ConsumptionAnswer(deliveryStatus: .delivered, sampleContentProvided: false, consumptionPercentage: 50_000)
            return ([
                send(active.originalTransactionID, percentage), send(family.originalTransactionID), send("1"), send("not-a-number"),
            ], [
                try put(#"{"customerConsented":false,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#),
                try put(#"{"customerConsented":true,"deliveryStatus":"DELIVERED_AND_WORKING","sampleContentProvided":false}"#),
                try put(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":1}"#),
                try put(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"refundPreference":"MAYBE"}"#),
                try put("not json"),
            ])
        }
        #expect(codes == [4_000_209, 4_000_185, 4_040_010, 4_000_006])
        #expect(codes.compactMap { $0 }.allSatisfy { ConsumptionInformation.refusals[$0] != nil }, "the client names each refusal")
        #expect(replies.map(\.0) == [400, 400, 400, 400, 400])
        for (index, code) in [4_000_035, 4_000_036, 4_000_041, 4_000_044].enumerated() {
            #expect(replies.map(\.1)[index].contains("\"errorCode\":\(code)"), "\(replies.map(\.1)[index])")
        }
        #expect(replies.map(\.1).last == "", "a malformed body is a 400 without an error code")
        #expect(received.isEmpty, "Apple keeps no answer it refused")
    }

    @Test func aTokenAppleWouldNotTakeIsAnswered401() async throws {
        let refunded = try #require(RenewalExtensionTests.truths(.refunded, .refunded).first)
        let (refused, received) = try await Self.withClient(signingKey: P256.Signing.PrivateKey()) { client, _, _, _ in
            Self.refusal { try client.sendConsumptionInformation(transactionID: refunded.originalTransactionID, Self.answer, in: .production) }
        }
        #expect(refused?.description.contains("401") == true, "\(String(describing: refused))")
        #expect(received.isEmpty)
    }

    @Test func pastTheRateLimitAnAnswerIsRefused429WithRetryAfter() async throws {
        let refunded = try #require(RenewalExtensionTests.truths(.refunded, .refunded).first)
        // Sent until the first refusal: on a loaded machine two calls in a row may be a second apart.
        let (outcomes, received) = try await Self.withClient(knobs: FaultKnobs(rateLimit: 1)) { client, _, _, _ in
            var outcomes: [ServerAPICallError?] = []
            while outcomes.count < 20, outcomes.last.map({ $0 == nil }) ?? true {
                outcomes.append(Self.refusal { try client.sendConsumptionInformation(transactionID: refunded.originalTransactionID, Self.answer, in: .production) })
            }
            return outcomes
        }
        let refusals = outcomes.compactMap { $0 }
        #expect(!refusals.isEmpty && refusals.allSatisfy { $0.code == 4_290_000 && $0.retryAfter == .seconds(1) }, "\(refusals)")
        #expect(received.count == outcomes.count - refusals.count, "only the answers within the rate were taken")
    }
}
