import AppStore
import AppStoreClients
import AppStoreSimulator
import Foundation
import Testing

/// The renewal-date extensions as the simulator speaks them and the client asks them: the period's
/// end moves for every later answer, a retry changes nothing, and Apple's rules answer its codes.
@Suite struct RenewalExtensionTests {
    static let anchorMs: Int64 = 1_795_000_000_000
    static let nowMs = anchorMs + 20 * day
    static let day: Int64 = 86_400_000
    static let fleet = SimulatedReceipt.fleet(count: 60, seed: 11, anchorMs: anchorMs).flatMap(\.subscriptions)

    /// The fleet's subscriptions (of `kind`, when given) in `status` now, production only.
    static func truths(_ kind: LifecycleKind?, _ status: AppStoreSimulator.SubscriptionStatus) -> [GroundTruth] {
        fleet.map { $0.groundTruth(at: nowMs) }.filter { ($0.kind == kind || kind == nil) && $0.status == status && $0.environment == .production }
    }

    /// A client for the simulator's Server API (with `knobs`), its clock stopped at `nowMs`.
    static func withClient<T: Sendable>(
        knobs: FaultKnobs = FaultKnobs(), _ body: @escaping @Sendable (ServerAPIClient) throws -> T
    ) async throws -> T {
        try await withSimulatedServerAPIClient(anchorMs: anchorMs, nowMs: nowMs, knobs: knobs, body)
    }

    /// The latest expiry Apple's statuses show for the subscription (what the fleet's next check reads).
    static func expiry(_ client: ServerAPIClient, _ id: String) -> Int64? {
        let verification = client.verify(originalTransactionID: id, knownLatestTransactionID: nil, refunds: .due) { _ in true }
        return verification.response?.latestReceiptInfo.compactMap(\.expiresDate?.millisecondsSince1970).max()
    }

    static func code(_ call: () throws -> Void) -> Int? {
        do {
            try call()
            return nil
        } catch let error as ServerAPICallError {
            return error.code
        } catch {
            return -1
        }
    }

    @Test func anExtensionMovesTheExpiryEveryLaterAnswerShowsAndARetryChangesNothing() async throws {
        let truth = try #require(Self.truths(.renewing, .active).first)
        let expiresAt = try #require(truth.expiresAtMs)
        let (first, retry, seen, third) = try await Self.withClient { client in
            let ask = ExtensionAsk(days: 7, reason: .serviceIssue, requestIdentifier: UUID().uuidString)
            let first = try client.extendRenewalDate(originalTransactionID: truth.originalTransactionID, ask, in: .production)
            let retry = try client.extendRenewalDate(originalTransactionID: truth.originalTransactionID, ask, in: .production)
            let seen = Self.expiry(client, truth.originalTransactionID)
            _ = try client.extendRenewalDate(
                originalTransactionID: truth.originalTransactionID,
                ExtensionAsk(days: 1, reason: .other, requestIdentifier: UUID().uuidString), in: .production)
            let third = Self.code {
                _ = try client.extendRenewalDate(
                    originalTransactionID: truth.originalTransactionID,
                    ExtensionAsk(days: 1, reason: .other, requestIdentifier: UUID().uuidString), in: .production)
            }
            return (first, retry, seen, third)
        }
        #expect(first.success && first.originalTransactionID == truth.originalTransactionID && first.webOrderLineItemID != nil)
        #expect(first.effectiveDate?.millisecondsSince1970 == expiresAt + 7 * Self.day)
        #expect(retry == first, "the same request identifier is one extension")
        #expect(seen == expiresAt + 7 * Self.day, "the statuses read the moved expiry")
        #expect(third == 4_030_005, "two extensions within 365 days are Apple's most")
    }

    @Test func appleRefusesWhatItsRulesRefuseWithItsCodes() async throws {
        let active = try #require(Self.truths(.renewing, .active).last)
        let expired = try #require(Self.truths(nil, .expired).first)
        let family = try #require(Self.truths(.familyShared, .active).first)
        let codes = try await Self.withClient { client in
            func ask(_ days: Int = 3, identifier: String = UUID().uuidString) -> ExtensionAsk {
                ExtensionAsk(days: days, reason: .customerSatisfaction, requestIdentifier: identifier)
            }
            func extend(_ id: String, _ ask: ExtensionAsk) -> Int? {
                Self.code { _ = try client.extendRenewalDate(originalTransactionID: id, ask, in: .production) }
            }
            return [
                extend(active.originalTransactionID, ask(91)),
                extend(active.originalTransactionID, ask(0)),
                extend(active.originalTransactionID, ask(identifier: String(repeating: "x", count: 129))),
                extend(expired.originalTransactionID, ask()),
                extend(family.originalTransactionID, ask()),
                extend("1", ask()),
                extend("not-a-number", ask()),
                Self.code { _ = try client.extendRenewalDate(originalTransactionID: active.originalTransactionID, ask(), in: .sandbox) },
            ]
        }
        #expect(codes == [4_000_009, 4_000_009, 4_000_011, 4_030_004, 4_030_007, 4_040_005, 4_000_008, 4_040_005])
    }

    @Test func extendingEveryActiveSubscriberIsReadUntilCompleteAndCountsEach() async throws {
        let product = "com.receiptfleet.demo.pro.monthly"
        let subscribers = Self.fleet.map { $0.groundTruth(at: Self.nowMs) }
            .filter { $0.environment == .production && $0.status == .active && $0.productID == product }
        let renewing = try #require(Self.truths(.renewing, .active).first)
        let (readings, again, seen, unknown) = try await Self.withClient { client in
            let ask = ExtensionAsk(days: 2, reason: .serviceIssue, requestIdentifier: UUID().uuidString)
            try client.extendRenewalDates(productID: product, ask, in: .production)
            var readings: [MassExtensionStatus] = []
            repeat {
                readings.append(try client.renewalExtensionStatus(productID: product, requestIdentifier: ask.requestIdentifier, in: .production))
            } while !readings.last!.complete && readings.count < 5
            try client.extendRenewalDates(productID: product, ask, in: .production)
            let again = try client.renewalExtensionStatus(productID: product, requestIdentifier: ask.requestIdentifier, in: .production)
            let unknown = Self.code {
                _ = try client.renewalExtensionStatus(productID: product, requestIdentifier: UUID().uuidString, in: .production)
            }
            return (readings, again, Self.expiry(client, renewing.originalTransactionID), unknown)
        }
        #expect(readings.count == 2 && !readings[0].complete && readings[0].succeededCount == nil, "Apple works on its own time")
        let done = try #require(readings.last)
        #expect(done.complete && done.completeDate?.millisecondsSince1970 == Self.nowMs)
        #expect((done.succeededCount ?? 0) + (done.failedCount ?? 0) == subscribers.count)
        #expect((done.succeededCount ?? 0) >= Self.truths(.renewing, .active).count)
        #expect(again == done, "asking again with the request identifier is the same request")
        #expect(seen == renewing.expiresAtMs.map { $0 + 2 * Self.day }, "extended once, however often asked")
        #expect(unknown == 4_040_009)
    }

    @Test func pastTheRateLimitAnExtensionIsAnswered429WithRetryAfter() async throws {
        let truth = try #require(Self.truths(.renewing, .active).first)
        // Asked until the first refusal: on a loaded machine two calls in a row may be a second apart.
        let refusals = try await Self.withClient(knobs: FaultKnobs(rateLimit: 1)) { client in
            for _ in 0..<20 {
                do throws(ServerAPICallError) {
                    _ = try client.extendRenewalDate(
                        originalTransactionID: truth.originalTransactionID,
                        ExtensionAsk(days: 1, reason: .other, requestIdentifier: "same-request"), in: .production)
                } catch {
                    return [error]
                }
            }
            return [ServerAPICallError]()
        }
        #expect(!refusals.isEmpty && refusals.allSatisfy { $0.code == 4_290_000 && $0.retryAfter == .seconds(1) }, "\(refusals)")
    }
}
