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
    /// A claim's calls that could not judge it (other than 21002, which the status policy counts)
    /// before it is refused as one Apple will not judge.
    static let claimAttempts = 8
    /// How long a claim Apple could not judge waits before the job tries again (the least tried
    /// claim first). Short: a registration is someone waiting for their purchase to count.
    static let claimRetryDelay = Duration.seconds(3)

    func judge(_ claim: QueuedClaim, of subscription: LoadedSubscription, job: Job, upcoming: Int) throws -> Decision {
        let subject = VerificationSubject.receipt(claim.receipt)
        let admission = try gate.admit(upcoming: upcoming, to: subject.firstEndpoint, forApp: subscription.app)
        if let refusal = admission.refusal { return .settle(refusal.settlement) }
        // As for a registration's receipt: a configuration error it shows is this receipt's alone.
        let answer = try ask(
            about: subject, ofApp: subscription.app, startingIn: subscription.environment,
            attempt: claim.attempts + 1, probing: admission == .probe, subscriptionID: nil)
        // With other claims waiting the job comes back at once for the next.
        let next: (Settlement) -> Settlement = { claim.waiting > 1 ? .postpone(.zero) : $0 }
        let digest = claim.receipt.sha256Hex
        func refuted(_ reason: String) -> Decision {
            logger.notice("a queued registration's receipt does not show its subscription; its claim is refused",
                          metadata: ["subscription": "\(subscription.id)", "reason": "\(reason)"])
            let orphan = claim.waiting == 1 && subscription.receipt == nil && subscription.state == nil
                && (subscription.backend ?? policy.defaultBackend) == .verifyReceipt
            return .judging(.refuted(receiptSHA256: digest, reason: reason, orphan: orphan), of: subscription.id, .settle(next(.ack(.refuted))))
        }
        switch answer.verdict {
        case .verified(let response):
            let now = Date()
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
        case .retry where claim.attempts + 1 >= Self.claimAttempts:
            return refuted("Apple could not judge it in \(Self.claimAttempts) attempts: \(answer.problem ?? "\(answer.verification.outcome)")")
        case .retry:
            return .judging(.triedAgain(receiptSHA256: digest), of: subscription.id, .settle(.postpone(Self.claimRetryDelay)))
        case .unavailable(let pause):
            return .settle(.postpone(max(pause, Self.claimRetryDelay).withJitter()))
        case .halted:
            return .settle(Refusal.halted.settlement)
        }
    }
}
