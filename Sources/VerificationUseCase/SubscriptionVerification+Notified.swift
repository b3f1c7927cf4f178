import AppStore
import Foundation
import Ledger

extension SubscriptionVerification {
    /// Writes what a V2 notification's signed data says (a transaction, perhaps its renewal info:
    /// the Server API's answer in small), when Apple signed it after the stored state was judged,
    /// so the change is known at once. The re-check the notification also queued confirms it; its
    /// events have the same ids, so nothing is announced twice. Data that does not analyse, or a
    /// subscription another writer changed meanwhile, is left to that re-check. Returns whether it wrote.
    public func applySigned(_ response: VerifyReceiptResponse, to subscription: LoadedSubscription, runID: String) throws -> Bool {
        guard let signedAt = response.receipt?.requestDate, subscription.state.map({ signedAt > $0.verifiedAt }) ?? true else {
            return false
        }
        let now = Date()
        guard let analysis = try? SubscriptionAnalyzer.analyze(
            stored: subscription.state, response: response, originalTransactionID: subscription.originalTransactionID, now: now)
        else { return false }
        let exchange = VerificationExchange(
            environment: response.effectiveEnvironment ?? subscription.environment, outcome: .status(0, isRetryable: nil),
            latency: .zero, endpoint: .subscriptionStatuses)
        let answer = Answer(
            verification: Verification(exchanges: [exchange], response: response), verdict: .verified(response), backend: .serverAPI)
        let write = VerificationWrite.analysed(analysis, of: subscription, attempt: answer.attempt(.verified, at: now, runID: runID))
        let settlement = try self.write([.write(write, reanalyse: nil, then: .ack(.verified))])[0]
        if case .ack = settlement { return true }
        return false
    }
}
