import AppStore
import AppStoreClients
import AppStoreSimulator
import Crypto
import Foundation
import HTTPClient
import TestSupport
import Testing

/// Every lifecycle the simulator tells, asked of verifyReceipt and of the App Store Server API
/// over real HTTP, and analysed step by step through its life: subscription by subscription, the
/// same states and the same events (id, type, time and every payload field) from either backend.
///
/// verifyReceipt is asked for the whole history here (`exclude-old-transactions` false): the
/// fleet asks for the newest transactions only, which saves Apple's time and ours, but then sees
/// one renewal where two happened between looks. The Server API reads the history whenever the
/// latest transaction changed, so it knows what the full receipt knows, and that is the claim.
@Suite struct ServerAPIConformanceTests {
    static let anchorMs: Int64 = 1_795_000_000_000
    static let seed: UInt64 = 11
    static let key = P256.Signing.PrivateKey()
    static let day: Int64 = 86_400_000
    /// Moments of each lifecycle, relative to the anchor: before, at, and after its turns.
    static let steps: [Int64] = [-40, -10, 0, 3, 20, 35, 70, 400].map { $0 * day }

    struct Seen: Equatable, CustomStringConvertible {
        var state: SubscriptionState
        var events: [String]
        var description: String { "\(state.status) \(state.productID ?? "-") until \(state.expiresAt.map { "\($0)" } ?? "-"): \(events)" }

        /// The state's fields that differ from `other`'s, by name.
        func differences(from other: Seen) -> String {
            let mine = Mirror(reflecting: state).children, theirs = Mirror(reflecting: other.state).children
            let fields = zip(mine, theirs).filter { "\($0.value)" != "\($1.value)" }
                .map { "\($0.label ?? "?"): \($0.value) / \($1.value)" }
            let onlyMine = events.filter { !other.events.contains($0) }, onlyTheirs = other.events.filter { !events.contains($0) }
            let eventDiff = events == other.events ? [] : ["events only here: \(onlyMine); only there: \(onlyTheirs)"]
            return (fields + eventDiff).joined(separator: "; ")
        }
    }

    /// One event, all of it: id, type, time and payload.
    static func summary(_ event: SubscriptionEvent) -> String {
        guard case .object(let fields) = event.payload else { return "\(event.type.rawValue)@\(event.occurredAt) \(event.id)" }
        let known = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return "\(event.type.rawValue)@\(event.occurredAt) \(event.id) \(known.joined(separator: ","))"
    }

    @Test func bothBackendsTellEveryLifecycleTheSame() async throws {
        let receipts = SimulatedReceipt.fleet(count: 28, seed: Self.seed, anchorMs: Self.anchorMs)
        let setup = ServerAPISimulation(publicKey: Self.key.publicKey, seeds: [Self.seed], anchorMs: Self.anchorMs)
        let root = try SimulatorSigningChain().root
        let (differences, compared, events) = try await LiveSimulator.with(startMs: Self.anchorMs + Self.steps[0], serverAPI: setup) { simulator in
            let (verifyReceipt, serverAPI) = (
                AppStoreEndpoints(production: simulator.productionURL, sandbox: simulator.sandboxURL),
                ServerAPIEndpoints(production: simulator.serverAPIProductionURL, sandbox: simulator.serverAPISandboxURL))
            let key = try ServerAPIKey(issuerID: "issuer", keyID: "SIMKEY", bundleID: "com.receiptfleet.demo",
                                       pem: Self.key.pemRepresentation)
            return try await onOwnThread {
                let receiptClient = try AppStoreClient(endpoints: verifyReceipt, http: HTTPClientConfiguration())
                let signedClient = try ServerAPIClient(
                    endpoints: serverAPI, tokens: try ServerAPITokens(key: key),
                    signatures: SignedPayloadVerifier(trustedRoots: [root]), http: HTTPClientConfiguration(), now: { Date() })
                var stored: [String: (receipt: SubscriptionState?, signed: SubscriptionState?)] = [:]
                var differences: [String] = []
                var (compared, events) = (0, 0)
                for step in Self.steps {
                    let now = Self.anchorMs + step
                    simulator.store.clock.set(nowMs: now, stopped: true)
                    for receipt in receipts {
                        for subscription in receipt.subscriptions {
                            let id = subscription.originalTransactionID
                            let viaReceipt = receiptClient.verify(
                                ReceiptData(base64: receipt.receiptData), sharedSecret: nil, excludeOldTransactions: false,
                                leave: { true })
                            let before = stored[id] ?? (nil, nil)
                            let viaSigned = signedClient.verify(
                                originalTransactionID: id, knownLatestTransactionID: before.signed?.latestTransactionID,
                                refunds: .due, leave: { _ in true })
                            let a = Self.analyse(viaReceipt, id, stored: before.receipt, at: now)
                            let b = Self.analyse(viaSigned, id, stored: before.signed, at: now)
                            stored[id] = (a?.state ?? before.receipt, b?.state ?? before.signed)
                            compared += 1
                            events += a?.events.count ?? 0
                            if a != b {
                                let fields = a.flatMap { a in b.map { a.differences(from: $0) } } ?? ""
                                differences.append("\(receipt.kind) \(id) at \(step / Self.day) days: \(fields)\n  verifyReceipt \(a.map(\.description) ?? "nothing")\n  Server API    \(b.map(\.description) ?? "nothing")")
                            }
                        }
                    }
                }
                return (differences, compared, events)
            }
        }
        #expect(compared >= 200, "every subscription at every step")
        #expect(events >= 100, "the lifecycles announce plenty: \(events)")
        #expect(differences.isEmpty, "\(differences.count) differ:\n\(differences.prefix(40).joined(separator: "\n"))")
    }

    /// What the fleet would store and announce: nil when Apple's answer is no valid one (both
    /// backends must then agree on that too).
    static func analyse(_ verification: Verification, _ id: String, stored: SubscriptionState?, at now: Int64) -> Seen? {
        guard let response = verification.response, verification.outcome == .status(0, isRetryable: nil),
              var analysis = try? SubscriptionAnalyzer.analyze(
                  stored: stored, response: response, originalTransactionID: id,
                  now: Date(timeIntervalSince1970: Double(now) / 1000), announcingPurchasesWithin: 7 * 86_400)
        else { return nil }
        // What only a receipt can carry.
        analysis.state.latestReceipt = nil
        return Seen(state: analysis.state, events: analysis.events.map(summary))
    }
}
