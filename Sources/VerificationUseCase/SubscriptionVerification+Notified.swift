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
        let now = clock.now()
        // No call was made, so there is no status for the status policy to judge: what Apple signed
        // is recorded as verified, with no latency and no HTTP status.
        let attempt = VerificationAttempt(
            attemptedAt: now, outcome: .verified, environment: response.effectiveEnvironment ?? subscription.environment,
            runID: runID, backend: .serverAPI)
        guard let (write, _) = try? analysedWrite(
            response, of: subscription, attempt: attempt, at: now, announcingPurchasesWithin: nil, purchases: nil)
        else { return false }
        if case .ack = try self.write([.write(write, reanalyse: nil, then: .ack(.verified))])[0] { return true }
        return false
    }
}
