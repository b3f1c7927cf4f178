import AppStore
import Foundation
import JobQueue
import Ledger
import Logging

/// The verification use case, once for every way in (a worker's batch, `receiptfleet verify`):
/// for a known subscription's job, the fleet's leave to call Apple (`AppleGate`), Apple's answer
/// (`ReceiptVerifier`), the status policy's verdict and the analysis, the report to the fleet of
/// what it must know (a pause, a halt, a recovery), and the write of every result in one
/// transaction (`VerificationStore`); then how to settle each job, now that its result is durable.
/// Settling in Redis is the caller's: a job leaves the queue only after `write` returned.
///
/// Like the connections behind its three ports, it is confined to one thread.
final class SubscriptionVerification {
    private let gate: any AppleGate
    private let verifier: any ReceiptVerifier
    private let store: any VerificationStore
    private let settings: FleetSettings
    private let metrics: FleetMetrics
    private let logger: Logger
    private let policy = StatusPolicy()

    init(
        gate: any AppleGate, verifier: any ReceiptVerifier, store: any VerificationStore, settings: FleetSettings,
        metrics: FleetMetrics, logger: Logger
    ) {
        self.gate = gate
        self.verifier = verifier
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
    }

    /// What to do with one job: verify its subscription, unless there is nothing to verify.
    /// `upcoming` counts this job and the batch's jobs after it: calls the gate may book at once.
    func decide(_ job: Job, _ subscription: LoadedSubscription?, upcoming: Int = 1) throws -> Decision {
        guard let subscription else { return .settle(.ack(.skipped)) }  // deleted since it was enqueued
        guard let receipt = subscription.receipt else {
            return .settle(.bury(JobFailure(errorClass: "no_receipt", message: "no receipt is stored for this subscription")))
        }
        if let verified = subscription.lastVerifiedAt, !job.reason.isHighPriority,
            verified.timeIntervalSince1970 * 1000 > Double(job.enqueuedAt)
        {
            return .settle(.ack(.skipped))  // verified since it was enqueued (an older run's job, say)
        }
        let admission = try gate.admit(upcoming: upcoming)
        switch admission {
        case .paused(let wait): return .settle(.postpone(wait.withJitter()))
        case .halted: return .settle(.postpone(.seconds(30)))
        case .granted, .probe, .wait: break
        }
        var probing = admission == .probe
        let calling = ContinuousClock.now
        let verification = verifier.verify(
            receipt, sharedSecret: settings.sharedSecret, startingIn: subscription.environment,
            mayRedirect: {
                // The other environment is one more call: it needs leave of its own.
                switch try? gate.admit(upcoming: 1) {
                case .granted?: return true
                case .probe?:
                    probing = true
                    return true
                default: return false  // the job is retried, the redirect with it
                }
            })
        let callDuration = calling.duration(to: .now) / verification.exchanges.count
        for exchange in verification.exchanges { metrics.answered(exchange) }
        return try judge(verification, of: subscription, job: job, probing: probing, callDuration: callDuration)
    }

    /// Turns Apple's answer into a write and a settlement, by the status policy.
    private func judge(
        _ verification: Verification, of subscription: LoadedSubscription, job: Job, probing: Bool, callDuration: Duration
    ) throws -> Decision {
        let now = Date()
        let exchange = verification.exchanges[verification.exchanges.count - 1]
        let appleStatus: Int? = if case .status(let status, _) = verification.outcome { status } else { nil }
        func attempt(_ outcome: AttemptOutcome, _ error: String? = nil) -> VerificationAttempt {
            VerificationAttempt(
                attemptedAt: now, outcome: outcome, environment: exchange.environment, appleStatus: appleStatus,
                httpStatus: exchange.httpStatus, latencyMilliseconds: Int(exchange.latency.seconds * 1000),
                error: error ?? exchange.problem, runID: job.runID)
        }
        func retryAlone() -> Decision {
            let failure = JobFailure(errorClass: verification.outcome.errorClass, message: exchange.problem ?? "\(verification.outcome)")
            return .write(.unchanged(subscription, attempt: attempt(.retryable)), reanalyse: nil, then: .retry(failure))
        }
        let action = policy.action(for: verification.outcome, attempt: job.attempt + 1)
        gate.called(action.lastAnswer, taking: callDuration)
        if probing, action.meansAppleAnswered { try gate.reportRecovered() }

        switch action {
        case .success, .expiredButValid:
            guard let response = verification.response else { return .settle(.postpone(.seconds(5))) }
            let purchaseWindow = job.reason == .registration ? settings.initialPurchaseWindow : nil
            let analyse = { (stored: SubscriptionState?) throws -> Analysis in
                try SubscriptionAnalyzer.analyze(
                    stored: stored, response: response, originalTransactionID: subscription.originalTransactionID, now: now,
                    announcingPurchasesWithin: purchaseWindow)
            }
            // The receipt's one-time purchases are recorded with the subscription, in its transaction.
            let purchases = PurchaseWrite(
                app: subscription.app, found: OneTimePurchases(response, nonRenewingProductIDs: settings.nonRenewingProductIDs),
                announcingPurchasesAfter: OneTimePurchases.announcingAfter(
                    response, stored: subscription.state, registrationWindow: purchaseWindow, now: now),
                accountID: subscription.accountID)
            do {
                return .write(.analysed(try analyse(subscription.state), of: subscription, attempt: attempt(.verified),
                                        purchases: purchases),
                              reanalyse: analyse, then: .ack(.verified))
            } catch let error as AnalysisError {
                let write = VerificationWrite.permanentFailure(
                    of: subscription, reason: error.description, attempt: attempt(.permanentFailure, error.description))
                return .write(write, reanalyse: nil, then: .ack(.permanentFailure))
            }
        case .retryable(upstreamUnavailable: true), .unavailableUnlessPersistent:
            let pause: Duration
            switch try gate.reportUnanswered(action, exchange) {
            case .counted(let wait): pause = wait
            case .halted(let reason): return halted(reason)
            }
            // A stray failure among good answers: this job alone tries again later.
            guard pause > .zero else { return retryAlone() }
            logger.warning("Apple is unavailable; the fleet pauses", metadata: ["pause": "\(pause)", "outcome": "\(verification.outcome)"])
            // Not the job's fault: it waits for the fleet's recovery without being charged an attempt.
            return .write(.unchanged(subscription, attempt: attempt(.retryable)), reanalyse: nil,
                          then: .postpone(pause.withJitter()))
        case .retryable, .retryOnSandbox, .retryOnProduction:
            return retryAlone()
        case .permanent(let reason):
            let write = VerificationWrite.permanentFailure(of: subscription, reason: reason, attempt: attempt(.permanentFailure, reason))
            return .write(write, reanalyse: nil, then: .ack(.permanentFailure))
        case .configurationError(let reason):
            // Touch no subscription: a wrong secret must never turn the fleet's subscriptions invalid.
            if case .status = verification.outcome {
                // 21004 and 21000 can be one app's receipt among another's: a lone one is buried with
                // its reason, and the fleet halts only when several subscriptions agree (then `resume`
                // replays the buried ones).
                let confirmed = try gate.reportConfigurationError(
                    subscriptionID: subscription.id, reason: reason, needed: settings.haltAfterConfigurationErrors)
                guard confirmed else {
                    logger.warning("one subscription's receipt answers a configuration error; its job goes to the dead letters",
                                   metadata: ["subscription": "\(subscription.id)", "reason": "\(reason)"])
                    return .settle(.bury(JobFailure(errorClass: verification.outcome.errorClass, message: reason)))
                }
                return halted(reason)
            }
            // A transport failure's problem names curl's error and the host, never a secret.
            let named = if case .transportFailure = verification.outcome, let problem = exchange.problem {
                "\(reason): \(problem)"
            } else { reason }
            try gate.halt(reason: named)
            return halted(named)
        }
    }

    /// This job's call halted the fleet for `reason`: raise the alarm; the job waits for `resume`.
    private func halted(_ reason: String) -> Decision {
        logger.critical("the fleet is halted by a configuration error; fix it, then run `receiptfleet resume`",
                        metadata: ["reason": "\(reason)"])
        return .settle(.postpone(.seconds(30)))
    }

    /// Writes every decision's result in one transaction, and returns how to settle each job now
    /// that its result is durable.
    func write(_ decisions: [Decision]) throws -> [Settlement] {
        let writes = decisions.compactMap { decision -> VerificationWrite? in
            if case .write(let write, _, _) = decision { write } else { nil }
        }
        let nightly = settings.nextNightlyRun(after: Date())
        let started = ContinuousClock.now
        var outcomes = try store.write(writes, nextNightlyRun: nightly)[...]
        if !writes.isEmpty { metrics.persisted(in: started.duration(to: .now)) }
        return try decisions.map { decision in
            switch decision {
            case .settle(let settlement):
                return settlement
            case .write(let write, let reanalyse, let then):
                var outcome = outcomes.popFirst()!
                if case .stale = outcome, let reanalyse {
                    outcome = try store.rewrite(write, nextNightlyRun: nightly, reanalysing: reanalyse)
                }
                switch outcome {
                case .written, .missing: return then
                case .stale: return .retry(JobFailure(errorClass: "stale", message: "lost the compare-and-set three times"))
                case .failed(let error): return .retry(JobFailure(errorClass: "database", message: "\(error)"))
                }
            }
        }
    }
}

/// What becomes of one job.
enum Decision {
    /// Write this result; once it is durable, settle the job as `then`. `reanalyse` redoes the
    /// analysis on a newer stored state if another writer got there first.
    case write(VerificationWrite, reanalyse: ((SubscriptionState?) throws -> Analysis)?, then: Settlement)
    /// Nothing to write.
    case settle(Settlement)
}

/// What becomes of a job once its result (if any) is durable.
public enum Settlement: Sendable, CustomStringConvertible {
    /// Done with it: the job leaves the queue, counted as this outcome.
    case ack(FleetMetrics.JobOutcome)
    case postpone(Duration)
    case retry(JobFailure)
    case bury(JobFailure)

    public var description: String {
        switch self {
        case .ack(let outcome): "done: \(outcome.rawValue)"
        case .postpone(let delay): "postponed by \(delay)"
        case .retry(let failure): "failed, worth retrying: \(failure.errorClass): \(failure.message)"
        case .bury(let failure): "cannot be verified: \(failure.errorClass): \(failure.message)"
        }
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
        }
    }
}
