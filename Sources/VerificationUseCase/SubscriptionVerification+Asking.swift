import AppStore
import Foundation
import JobQueue
import Ledger
import Logging

/// The use case's call to Apple and its verdict, the same for every way in.
extension SubscriptionVerification {
    /// Asks Apple about `subject`, a receipt or transaction of `app`, for a caller that was admitted
    /// (the call leaves only if still on time, `AppleGate.departing`; a further call, to the other
    /// environment or for more history, asks the gate itself); judges the answer by the status
    /// policy, and tells the fleet what it must know: a recovery after `probing`, an unavailable
    /// Apple (a pause, a halt), a spent endpoint, a configuration error. `attempt` counts this one
    /// (for 21002's last chance). `app` decides the shared secret; it is nil for a registration's
    /// receipt whose app is not known yet. `subscriptionID` is nil for a subject the ledger does not
    /// know yet (a registration): its configuration error is one client's, perhaps another app's
    /// receipt, and never halts anything.
    public func ask(
        about subject: VerificationSubject, ofApp app: String?, startingIn environment: AppStoreEnvironment, attempt: Int,
        probing: Bool, subscriptionID: Int64?
    ) throws -> Answer {
        var probing = probing
        // A call refused because its endpoint's budget is spent or the fleet paused: the job waits that long.
        var refusedFor: Duration?
        var departed = false
        let calling = ContinuousClock.now
        let verification = verifier.verify(
            subject, ofApp: app, startingIn: environment,
            leave: { endpoint in
                // The admitted call leaves only on time; another environment or another page is one
                // more call: it needs leave of its own.
                let leave = departed
                    ? try? gate.admit(upcoming: 1, to: endpoint, forApp: app) : try? gate.departing(to: endpoint, forApp: app)
                departed = true
                switch leave {
                case .granted?: return true
                case .probe?:
                    probing = true
                    return true
                case .throttled(let wait)?, .paused(let wait)?:
                    refusedFor = wait
                    return false
                default: return false  // the job is retried, the call with it
                }
            })
        var verdict = Verdict.retry
        if verification.outcome != .notSent {  // else Apple heard nothing, and the fleet has nothing to hear
            let callDuration = calling.duration(to: .now) / verification.exchanges.count
            for exchange in verification.exchanges { metrics.answered(exchange) }
            let action = statusPolicy.action(for: verification.outcome, attempt: attempt)
            gate.called(action.lastAnswer, by: verification.lastExchange.endpoint, forApp: app, taking: callDuration)
            if probing, action.meansAppleAnswered { try gate.reportRecovered() }
            verdict = try self.verdict(action, verification, subscription: subscriptionID.map { ($0, app ?? policy.defaultApp) })
        }
        if case .retry = verdict, let refusedFor { verdict = .unavailable(pause: refusedFor) }  // not the job's fault
        return Answer(verification: verification, verdict: verdict, backend: subject.backend)
    }

    /// What the status policy's action means for this caller, once the fleet heard of it.
    /// `subscription` is the ledger's id and app of what was asked about; nil for a registration.
    private func verdict(
        _ action: VerificationAction, _ verification: Verification, subscription: (id: Int64, app: String)?
    ) throws -> Verdict {
        let exchange = verification.lastExchange
        let backend = exchange.endpoint.backend
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
        case .throttled(let retryAfter):
            // This endpoint alone waits; the fleet's other endpoints go on.
            let wait = try gate.reportThrottled(exchange.endpoint, for: retryAfter)
            logger.notice("Apple's rate limit for an endpoint is spent; it waits",
                          metadata: ["endpoint": "\(exchange.endpoint.rawValue)", "wait": "\(wait)"])
            return .unavailable(pause: wait)
        case .retryable, .retryOnSandbox, .retryOnProduction:
            return .retry
        case .permanent(let reason):
            return .rejected(reason: reason)
        case .configurationError(let reason):
            guard let subscription else {
                logger.error("a registration's receipt answers a configuration error", metadata: ["reason": "\(reason)"])
                return .misconfigured(reason: reason)
            }
            // Touch no subscription: a wrong secret must never turn the fleet's subscriptions invalid.
            if verification.outcome.concernsOneSubscription {
                // 21004 and 21000 can be one app's receipt among another's: a lone one is buried with
                // its reason, and the app (verifyReceipt: the secret is the app's) halts only when
                // several of its subscriptions agree (then `resume` replays the buried ones).
                let confirmed = try gate.reportConfigurationError(
                    subscriptionID: subscription.id, app: subscription.app, reason: reason,
                    needed: policy.haltAfterConfigurationErrors, backend: backend)
                guard confirmed else {
                    logger.warning("one subscription's receipt answers a configuration error; its job goes to the dead letters",
                                   metadata: ["subscription": "\(subscription.id)", "app": "\(subscription.app)", "reason": "\(reason)"])
                    return .misconfigured(reason: reason)
                }
                return halted(reason, backend, app: subscription.app)
            }
            // The problem names curl's error and the host, or the Server API's key id: never a secret.
            let named = switch (verification.outcome, exchange.problem) {
            case (.transportFailure, let problem?), (.serverAPI, let problem?): "\(reason): \(problem)"
            default: reason
            }
            try gate.halt(reason: named, backend: backend)
            return halted(named, backend)
        }
    }

    /// This call halted the fleet, its Server API or one `app` (or found it halted) for `reason`: raise the alarm.
    private func halted(_ reason: String, _ backend: VerificationBackend = .verifyReceipt, app: String? = nil) -> Verdict {
        let what = switch (backend, app) {
        case (.serverAPI, _): "the App Store Server API (verifyReceipt goes on)"
        case (.verifyReceipt, let app?): "the app \(app) (the other apps go on)"
        case (.verifyReceipt, nil): "the fleet"
        }
        let resume = app.map { "receiptfleet resume --app \($0)" } ?? "receiptfleet resume"
        logger.critical("\(what) is halted by a configuration error; fix it, then run `\(resume)`",
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

    /// What the call got, for the next admission. A 429 says nothing of the receipt.
    var lastAnswer: LastAnswer {
        switch self {
        case .retryable(upstreamUnavailable: true), .unavailableUnlessPersistent, .throttled: .none
        case .configurationError: .configurationError
        default: .verdict
        }
    }
}

extension VerificationOutcome {
    /// An answer about this one receipt or transaction: a configuration error it shows may be its
    /// own (another app's), so it counts toward a halt instead of halting at once.
    var concernsOneSubscription: Bool {
        switch self {
        case .status, .serverAPI(.untrusted): true
        default: false
        }
    }
}
