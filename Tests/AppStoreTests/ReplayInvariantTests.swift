import AppStore
import AppStoreSimulator
import Foundation
import PropertyBased
import Testing

/// Events agree with the state: over every simulated lifecycle, looked at on a random schedule,
/// replaying a subscription's events from its baseline gives its stored product, status and
/// auto-renew, and every state is the simulator's truth at the moment Apple answered.
@Suite struct ReplayInvariantTests {
    /// 2025-11-20 09:00 UTC, the moment every simulated story is centred on.
    static let anchorMs: Int64 = 1_763_629_200_000

    @Test func replayingTheEventsGivesTheStoredState() async {
        let kinds = LifecycleKind.allCases.count
        await propertyCheck(
            count: 150, input: Gen.int(in: 0...(4 * kinds - 1)), Gen.int(in: 1...40).array(of: 3...14), Gen.bool
        ) { index, gaps, excludeOld in
            let environment = LifecycleKind.at(index: index).environment
            let receipt = SimulatedReceipt(
                token: ReceiptToken(seed: 11, index: index, environment: environment, anchorMs: Self.anchorMs))
            // A look every few days in production, every few tens of seconds in the sandbox.
            let unit: Int64 = environment == .production ? 86_400_000 / 4 : 15_000
            var lookMs = Self.anchorMs - 20 * unit
            for subscription in receipt.subscriptions {
                var stored: SubscriptionState?
                var replay: EventReplay?
                for gap in gaps {
                    lookMs += Int64(gap) * unit
                    let answer = receipt.answer(at: lookMs, excludeOldTransactions: excludeOld)
                    guard answer.status == 0,
                          let response = try? VerifyReceiptResponse(body: answer.body, httpStatus: 200),
                          let analysis = try? SubscriptionAnalyzer.analyze(
                            stored: stored, response: response, originalTransactionID: subscription.originalTransactionID,
                            now: Date(), products: Self.catalog)
                    else { continue }
                    let truth = subscription.groundTruth(at: lookMs)
                    #expect(analysis.state.status.rawValue == truth.status.rawValue, "\(receipt.kind) at \(lookMs)")
                    if var replayed = replay {
                        for event in analysis.events { replayed.apply(event) }
                        #expect(replayed.compared == EventReplay(comparing: analysis.state),
                                "\(receipt.kind) at \(lookMs): \(analysis.events.map(\.type.rawValue))")
                        replay = replayed
                    } else {
                        replay = EventReplay(analysis.state)  // the baseline
                    }
                    stored = analysis.state
                }
            }
        }
    }

    /// The simulator's products, premium above pro.
    static let catalog = ProductCatalog(levels: [
        "com.receiptfleet.demo.premium.monthly": 1, "com.receiptfleet.demo.premium.yearly": 1,
        "com.receiptfleet.demo.pro.monthly": 2, "com.receiptfleet.demo.addon.monthly": 1,
    ])
}
