import AppStore
import Foundation
import JobQueue
import Ledger
import Logging

/// The use case's call to Apple and its verdict, the same for every way in.
extension SubscriptionVerification {
    /// Asks Apple about `subject` (a caller that was admitted; a further call, to the other
    /// environment or for more history, asks the gate itself), judges the answer by the status policy, and tells the fleet what it
    /// must know: a recovery after `probing`, an unavailable Apple (a pause, a halt), a
    /// configuration error. `attempt` counts this one (for 21002's last chance).
    /// `subscriptionID` is nil for a subject the ledger does not know yet (a registration): its
    /// configuration error is one client's, perhaps another app's receipt, and never halts the fleet.
    public func ask(
        about subject: VerificationSubject, startingIn environment: AppStoreEnvironment, attempt: Int, probing: Bool,
        subscriptionID: Int64?
    ) throws -> Answer {
        var probing = probing
        let calling = ContinuousClock.now
        let verification = verifier.verify(
            subject, startingIn: environment,
            mayCallAgain: {
                // Another environment or another page is one more call: it needs leave of its own.
                switch try? gate.admit(upcoming: 1) {
                case .granted?: return true
                case .probe?:
                    probing = true
                    return true
                default: return false  // the job is retried, the call with it
                }
            })
        let callDuration = calling.duration(to: .now) / verification.exchanges.count
        for exchange in verification.exchanges { metrics.answered(exchange) }
        let action = policy.action(for: verification.outcome, attempt: attempt)
        gate.called(action.lastAnswer, taking: callDuration)
        if probing, action.meansAppleAnswered { try gate.reportRecovered() }
        return Answer(
            verification: verification, verdict: try verdict(action, verification, subscriptionID: subscriptionID),
            backend: subject.backend)
    }

    /// What the status policy's action means for this caller, once the fleet heard of it.
    private func verdict(_ action: VerificationAction, _ verification: Verification, subscriptionID: Int64?) throws -> Verdict {
        let exchange = verification.lastExchange
        switch action {
        case .success, .expiredButValid:
            guard let response = verification.response else { return .retry }
            return .verified(response)
        case .retryable(upstreamUnavailable: true), .unavailableUnlessPersistent:
            switch try gate.reportUnanswered(action, exchange) {
            case .counted(let pause):
                if pause > .zero {
                    logger.warning("Apple is unavailable; the fleet pauses", metadata: ["pause": "\(pause)", "outcome": "\(verification.outcome)"])
                }
                return .unavailable(pause: pause)
            case .halted(let reason): return halted(reason)
            }
        case .retryable, .retryOnSandbox, .retryOnProduction:
            return .retry
        case .permanent(let reason):
            return .rejected(reason: reason)
        case .configurationError(let reason):
            guard let subscriptionID else {
                logger.error("a registration's receipt answers a configuration error", metadata: ["reason": "\(reason)"])
                return .misconfigured(reason: reason)
            }
            // Touch no subscription: a wrong secret must never turn the fleet's subscriptions invalid.
            if verification.outcome.concernsOneSubscription {
                // 21004 and 21000 can be one app's receipt among another's: a lone one is buried with
                // its reason, and the fleet halts only when several subscriptions agree (then `resume`
                // replays the buried ones).
                let confirmed = try gate.reportConfigurationError(
                    subscriptionID: subscriptionID, reason: reason, needed: settings.haltAfterConfigurationErrors)
                guard confirmed else {
                    logger.warning("one subscription's receipt answers a configuration error; its job goes to the dead letters",
                                   metadata: ["subscription": "\(subscriptionID)", "reason": "\(reason)"])
                    return .misconfigured(reason: reason)
                }
                return halted(reason)
            }
            // The problem names curl's error and the host, or the Server API's key id: never a secret.
            let named = switch (verification.outcome, exchange.problem) {
            case (.transportFailure, let problem?), (.serverAPI, let problem?): "\(reason): \(problem)"
            default: reason
            }
            try gate.halt(reason: named)
            return halted(named)
        }
    }

    /// This call halted the fleet (or found it halted) for `reason`: raise the alarm.
    private func halted(_ reason: String) -> Verdict {
        logger.critical("the fleet is halted by a configuration error; fix it, then run `receiptfleet resume`",
                        metadata: ["reason": "\(reason)"])
        return .halted(reason: reason)
    }
}

extension VerificationAction {
    /// Apple (or something on its behalf) answered the probe: the fleet may stop pausing.
    public var meansAppleAnswered: Bool {
        switch self {
        case .retryable(upstreamUnavailable: true), .unavailableUnlessPersistent: false
        default: true
        }
    }

    /// What the call got, for the next admission.
    var lastAnswer: LastAnswer {
        switch self {
        case .retryable(upstreamUnavailable: true), .unavailableUnlessPersistent: .none
        case .configurationError: .configurationError
        default: .verdict
        }
    }
}

extension VerificationOutcome {
    /// A short, stable name for grouping failures: "apple.21002", "http.503", "timeout".
    var errorClass: String {
        switch self {
        case .status(let status, _): "apple.\(status)"
        case .unreadableBody(let httpStatus): "http.\(httpStatus)"
        case .transportFailure(let failure): "\(failure)"
        case .serverAPI(let status): "server_api.\(status.name)"
        }
    }

    /// An answer about this one receipt or transaction: a configuration error it shows may be its
    /// own (another app's), so it counts toward a halt instead of halting at once.
    var concernsOneSubscription: Bool {
        switch self {
        case .status, .serverAPI(.untrusted): true
        default: false
        }
    }
}
