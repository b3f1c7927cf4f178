import AppStore
import Foundation
import JobQueue
import Ledger
import Logging

/// The verification use case, once for every way in (a worker's batch, `receiptfleet verify`, a
/// registration through the API): the fleet's leave to call Apple (`AppleGate`), Apple's answer
/// (`ReceiptVerifier`), the status policy's verdict (`ask`), the report to the fleet of what it
/// must know (a pause, a halt, a recovery), the analysis, and the write of every result in one
/// transaction (`VerificationStore`).
///
/// For a known subscription's job (`decide`, then `write`), it also says how to settle the job
/// now that its result is durable; settling in Redis is the caller's, so a job leaves the queue
/// only after `write` returned. A registration asks about a receipt the ledger does not know yet
/// (`ask`), adds its subscriptions, then `record`s the answer for them.
///
/// Like the connections behind its three ports, it is confined to one thread.
public final class SubscriptionVerification {
    private let gate: any AppleGate
    private let verifier: any ReceiptVerifier
    private let store: any VerificationStore
    private let settings: FleetSettings
    private let metrics: FleetMetrics
    private let logger: Logger
    private let policy = StatusPolicy()

    public init(
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
        let answer = try ask(
            about: receipt, startingIn: subscription.environment, attempt: job.attempt + 1, probing: admission == .probe,
            subscriptionID: subscription.id)
        return judge(answer, of: subscription, job: job)
    }

    /// Asks Apple about `receipt` (a caller that was admitted; the redirect to the other environment
    /// asks the gate itself), judges the answer by the status policy, and tells the fleet what it
    /// must know: a recovery after `probing`, an unavailable Apple (a pause, a halt), a
    /// configuration error. `attempt` counts this one (for 21002's last chance).
    /// `subscriptionID` is nil for a receipt the ledger does not know yet (a registration): its
    /// configuration error is one client's, perhaps another app's receipt, and never halts the fleet.
    public func ask(
        about receipt: ReceiptData, startingIn environment: AppStoreEnvironment, attempt: Int, probing: Bool,
        subscriptionID: Int64?
    ) throws -> Answer {
        var probing = probing
        let calling = ContinuousClock.now
        let verification = verifier.verify(
            receipt, sharedSecret: settings.sharedSecret, startingIn: environment,
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
        let action = policy.action(for: verification.outcome, attempt: attempt)
        gate.called(action.lastAnswer, taking: callDuration)
        if probing, action.meansAppleAnswered { try gate.reportRecovered() }
        return Answer(verification: verification, verdict: try verdict(action, verification, subscriptionID: subscriptionID))
    }

    /// What the status policy's action means for this caller, once the fleet heard of it.
    private func verdict(_ action: VerificationAction, _ verification: Verification, subscriptionID: Int64?) throws -> Verdict {
        let exchange = verification.exchanges[verification.exchanges.count - 1]
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

    /// Turns a judged answer into a write and a settlement.
    private func judge(_ answer: Answer, of subscription: LoadedSubscription, job: Job) -> Decision {
        let now = Date()
        let outcome = answer.verification.outcome
        func retryAlone() -> Decision {
            let failure = JobFailure(errorClass: outcome.errorClass, message: answer.problem ?? "\(outcome)")
            return .write(.unchanged(subscription, attempt: answer.attempt(.retryable, at: now, runID: job.runID)),
                          reanalyse: nil, then: .retry(failure))
        }
        switch answer.verdict {
        case .verified(let response):
            let purchaseWindow = job.reason == .registration ? settings.initialPurchaseWindow : nil
            // The receipt's one-time purchases are recorded with the subscription, in its transaction.
            let purchases = PurchaseWrite(
                app: subscription.app, found: OneTimePurchases(response, nonRenewingProductIDs: settings.nonRenewingProductIDs),
                announcingPurchasesAfter: OneTimePurchases.announcingAfter(
                    response, stored: subscription.state, registrationWindow: purchaseWindow, now: now),
                accountID: subscription.accountID)
            return analysed(response, answer: answer, of: subscription, at: now, runID: job.runID,
                            announcingPurchasesWithin: purchaseWindow, purchases: purchases)
        case .unavailable(let pause):
            // A stray failure among good answers: this job alone tries again later.
            guard pause > .zero else { return retryAlone() }
            // Not the job's fault: it waits for the fleet's recovery without being charged an attempt.
            return .write(.unchanged(subscription, attempt: answer.attempt(.retryable, at: now, runID: job.runID)),
                          reanalyse: nil, then: .postpone(pause.withJitter()))
        case .retry:
            return retryAlone()
        case .rejected(let reason):
            let write = VerificationWrite.permanentFailure(
                of: subscription, reason: reason, attempt: answer.attempt(.permanentFailure, at: now, runID: job.runID, error: reason))
            return .write(write, reanalyse: nil, then: .ack(.permanentFailure))
        case .misconfigured(let reason):
            return .settle(.bury(JobFailure(errorClass: outcome.errorClass, message: reason)))
        case .halted:
            return .settle(.postpone(.seconds(30)))  // waits for `resume`
        }
    }

    /// The write of Apple's answer about `subscription`: analysed on its stored state (and again
    /// on a newer one, should another writer get there first); a receipt the analysis cannot
    /// read is a permanent failure.
    private func analysed(
        _ response: VerifyReceiptResponse, answer: Answer, of subscription: LoadedSubscription, at now: Date, runID: String,
        announcingPurchasesWithin purchaseWindow: TimeInterval?, purchases: PurchaseWrite?
    ) -> Decision {
        let analyse = { (stored: SubscriptionState?) throws -> Analysis in
            try SubscriptionAnalyzer.analyze(
                stored: stored, response: response, originalTransactionID: subscription.originalTransactionID, now: now,
                announcingPurchasesWithin: purchaseWindow)
        }
        do {
            return .write(.analysed(try analyse(subscription.state), of: subscription,
                                    attempt: answer.attempt(.verified, at: now, runID: runID), purchases: purchases),
                          reanalyse: analyse, then: .ack(.verified))
        } catch {
            let reason = "\(error)"
            let write = VerificationWrite.permanentFailure(
                of: subscription, reason: reason, attempt: answer.attempt(.permanentFailure, at: now, runID: runID, error: reason))
            return .write(write, reanalyse: nil, then: .ack(.permanentFailure))
        }
    }

    /// Writes a verified answer for every subscription on a registered receipt (already in the
    /// ledger, loaded after the answer), in one transaction; its one-time purchases are the
    /// caller's to record. Throws if any could not be written.
    public func record(
        _ response: VerifyReceiptResponse, answer: Answer, for subscriptions: [LoadedSubscription], runID: String,
        announcingPurchasesWithin purchaseWindow: TimeInterval?
    ) throws {
        let now = Date()
        let decisions = subscriptions.map {
            analysed(response, answer: answer, of: $0, at: now, runID: runID, announcingPurchasesWithin: purchaseWindow,
                     purchases: nil)
        }
        for settlement in try write(decisions) {
            if case .retry(let failure) = settlement { throw RecordingFailure(failure: failure) }
        }
    }

    /// This call halted the fleet (or found it halted) for `reason`: raise the alarm.
    private func halted(_ reason: String) -> Verdict {
        logger.critical("the fleet is halted by a configuration error; fix it, then run `receiptfleet resume`",
                        metadata: ["reason": "\(reason)"])
        return .halted(reason: reason)
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
