import AppStore
import Foundation
import JobQueue
import Ledger

/// A registration queued while Apple could not be asked names its subscription and brings a
/// receipt anyone could have sent. Apple judges each such receipt alone, before the subscription's
/// own: one that shows the subscription is written as any verified answer and proves its claims;
/// one that does not (junk, another subscription's, another app's) is refused and changes nothing,
/// so a stranger's receipt can neither replace the owner's nor turn the subscription invalid.
extension SubscriptionVerification {
    /// The calls a claim's receipt may cost, whatever Apple answers: the three the status policy
    /// gives a receipt it cannot read (21002), and no more for any other answer that judges nothing.
    /// Taken one at a time from the ledger before each call, so concurrent jobs share them.
    static let claimAttempts = StatusPolicy().malformedReceiptAttempts
    /// How long a claim Apple could not judge waits before the job tries again (the least tried
    /// claim first). Short: a registration is someone waiting for their purchase to count.
    static let claimRetryDelay = Duration.seconds(3)

    /// Has Apple judge a queued registration's receipt alone: the subscription's own receipt and
    /// state change only if the answer shows the subscription.
    func judge(_ claim: QueuedClaim, of subscription: LoadedSubscription, job: Job, upcoming: Int) throws -> Decision {
        let subject = VerificationSubject.receipt(claim.receipt)
        let admission = try gate.admit(upcoming: upcoming, to: subject.firstEndpoint, forApp: subscription.app)
        if let refusal = admission.refusal { return .settle(refusal.settlement) }
        let digest = claim.receipt.sha256Hex
        guard let attempt = try store.takeClaimAttempt(
            of: subscription.id, receiptSHA256: digest, seen: claim.attempts, limit: Self.claimAttempts)
        else {
            // Another job took a call since this one loaded the claim and judges it: this one comes
            // back for the claims after it, unless the least tried one has no call left (all are judged now).
            return .settle(claim.waiting > 1 && claim.attempts < Self.claimAttempts ? .postpone(.zero) : .ack(.skipped))
        }
        // As for a registration's receipt: a configuration error it shows is this receipt's alone.
        let answer = try ask(
            about: subject, ofApp: subscription.app, startingIn: subscription.environment,
            attempt: attempt, probing: admission == .probe, subscriptionID: nil)
        // With other claims waiting the job comes back at once for the next.
        let next: (Settlement) -> Settlement = { claim.waiting > 1 ? .postpone(.zero) : $0 }
        func refuted(_ reason: String) -> Decision {
            logger.notice("a queued registration's receipt does not show its subscription; its claim is refused",
                          metadata: ["subscription": "\(subscription.id)", "reason": "\(reason)"])
            let orphan = claim.waiting == 1 && subscription.receipt == nil && subscription.state == nil
                && (subscription.backend ?? policy.defaultBackend) == .verifyReceipt
            return .judging(.refuted(receiptSHA256: digest, reason: reason, orphan: orphan), of: subscription.id, .settle(next(.ack(.refuted))))
        }
        switch answer.verdict {
        case .verified(let response):
            let now = clock.now()
            do {
                let window = policy.initialPurchaseWindow
                let (write, reanalyse) = try analysedWrite(
                    response, of: subscription, attempt: answer.attempt(.verified, at: now, runID: job.runID), at: now,
                    announcingPurchasesWithin: window, purchases: purchases(in: response, of: subscription, registrationWindow: window, now: now))
                return .judging(.proven(claim.receipt), of: subscription.id, .write(write, reanalyse: reanalyse, then: next(.ack(.verified))))
            } catch {
                return refuted("\(error)")
            }
        case .rejected(let reason), .misconfigured(let reason):
            return refuted(reason)
        case .retry where attempt >= Self.claimAttempts:
            return refuted("Apple could not judge it in \(Self.claimAttempts) attempts: \(answer.problem ?? "\(answer.verification.outcome)")")
        case .retry:
            return .settle(.postpone(Self.claimRetryDelay))
        case .unavailable(let pause):
            return .judging(.givenBack(receiptSHA256: digest), of: subscription.id,
                            .settle(.postpone(max(pause, Self.claimRetryDelay).withJitter())))
        case .halted:
            return .judging(.givenBack(receiptSHA256: digest), of: subscription.id, .settle(Refusal.halted.settlement))
        }
    }
}
