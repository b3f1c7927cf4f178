import AppStore
import Foundation
import JobQueue
import Lanes
import Ledger
import Logging

/// The verification use case, once for every way in (a worker's batch, `receiptfleet verify`, a
/// registration through the API): the fleet's leave to call Apple (`AppleGate`), Apple's answer
/// (`AppleVerifier`), the status policy's verdict (`ask`), the report to the fleet of what it
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
    let gate: any AppleGate
    let verifier: any AppleVerifier
    let store: any VerificationStore
    let policy: any VerificationPolicy
    let metrics: any VerificationMetrics
    let logger: Logger
    /// The time a verification is written at and schedules from.
    public let clock: any FleetClock
    let statusPolicy = StatusPolicy()

    public init(
        gate: any AppleGate, verifier: any AppleVerifier, store: any VerificationStore, policy: any VerificationPolicy,
        metrics: any VerificationMetrics, clock: any FleetClock, logger: Logger
    ) {
        self.gate = gate
        self.verifier = verifier
        self.store = store
        self.policy = policy
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    /// What to do with one job: verify its subscription, unless there is nothing to verify.
    /// `upcoming` counts this job and the batch's jobs after it: calls the gate may book at once.
    public func decide(_ job: Job, _ subscription: LoadedSubscription?, upcoming: Int = 1) throws -> Decision {
        guard let subscription else { return .settle(.ack(.skipped)) }  // deleted since it was enqueued
        if let claim = subscription.claim { return try judge(claim, of: subscription, job: job, upcoming: upcoming) }
        guard let subject = subject(of: subscription, askedFor: job.reason.isHighPriority) else {
            // Its claims were judged (by this job or another) and none proved the subscription.
            if job.reason == .registration { return .settle(.ack(.skipped)) }
            if let status = subscription.state?.status, [.expired, .refunded].contains(status) {
                // Retention dropped the receipt of a subscription over long ago: a returning customer's
                // app registers a new one, which brings the subscription back to the schedule.
                return .settle(.ack(.skipped))
            }
            return .settle(.bury(JobFailure(errorClass: "no_receipt", message: "no receipt is stored for this subscription")))
        }
        // Verified since it was enqueued: an older run's job, say, or a registration whose claim
        // another job proved. Someone asked for the other high-priority ones after that answer.
        if let verified = subscription.lastVerifiedAt, job.reason == .registration || !job.reason.isHighPriority,
            verified.timeIntervalSince1970 * 1000 > Double(job.enqueuedAt)
        {
            return .settle(.ack(.skipped))
        }
        let admission = try gate.admit(upcoming: upcoming, to: subject.firstEndpoint, forApp: subscription.app)
        // Halted (the fleet, or this job's app alone: the other apps' jobs go on), it waits for `resume`.
        if let refusal = admission.refusal { return .settle(refusal.settlement) }
        let answer = try ask(
            about: subject, ofApp: subscription.app, startingIn: subscription.environment, attempt: job.attempt + 1,
            probing: admission == .probe, subscriptionID: subscription.id)
        let decision = judge(answer, of: subscription, job: job)
        // A claim queued before claims kept their receipts knows only its digest: this receipt's, if it was the one.
        if job.reason == .registration, case .receipt(let receipt) = subject, case .write(_, _, .ack(.verified)) = decision {
            return .judging(.proven(receipt), of: subscription.id, decision)
        }
        return decision
    }

    /// What Apple is asked about `subscription`, by its backend: its receipt (nil when none is
    /// stored), or its original transaction with the latest one the fleet knows. A check someone
    /// `askedFor` (Apple's notification, an operator) reads the refunds whatever the day: a REFUND
    /// notification's re-check must see the refund; and it asks both environments, while a nightly
    /// re-check of a transaction Apple knew in neither asks one (`AppStoreEnvironment.recheck`).
    private func subject(of subscription: LoadedSubscription, askedFor: Bool) -> VerificationSubject? {
        switch subscription.backend ?? policy.defaultBackend {
        case .verifyReceipt:
            return subscription.receipt.map(VerificationSubject.receipt)
        case .serverAPI:
            let unknownTonight = askedFor || subscription.state?.status != .invalid ? nil
                : AppStoreEnvironment.recheck(ofUnknown: subscription.originalTransactionID, filedIn: subscription.environment, on: clock.now())
            return .transaction(
                originalTransactionID: subscription.originalTransactionID,
                knownLatestTransactionID: subscription.state?.latestTransactionID,
                refunds: askedFor ? .due : policy.refundCheck(of: subscription.id, lastRead: subscription.state?.refundsReadAt),
                onlyIn: unknownTonight)
        }
    }

    /// Turns a judged answer into a write and a settlement.
    private func judge(_ answer: Answer, of subscription: LoadedSubscription, job: Job) -> Decision {
        let now = clock.now()
        let outcome = answer.verification.outcome
        func retryAlone() -> Decision {
            let failure = JobFailure(errorClass: outcome.errorClass, message: answer.problem ?? "\(outcome)")
            return .write(.unchanged(subscription, attempt: answer.attempt(.retryable, at: now, runID: job.runID)),
                          reanalyse: nil, then: .retry(failure))
        }
        switch answer.verdict {
        case .verified(let response):
            let purchaseWindow = job.reason == .registration ? policy.initialPurchaseWindow : nil
            return analysed(response, answer: answer, of: subscription, at: now, runID: job.runID,
                            announcingPurchasesWithin: purchaseWindow,
                            purchases: purchases(in: response, of: subscription, registrationWindow: purchaseWindow, now: now))
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
            return .settle(Refusal.halted.settlement)  // waits for `resume`
        }
    }

    /// The one-time purchases on the receipt Apple answered about, recorded with the subscription in its transaction.
    func purchases(
        in response: VerifyReceiptResponse, of subscription: LoadedSubscription, registrationWindow: TimeInterval?, now: Date
    ) -> PurchaseWrite {
        PurchaseWrite(
            app: subscription.app, found: OneTimePurchases(response, nonRenewingProductIDs: policy.nonRenewingProductIDs),
            announcingPurchasesAfter: OneTimePurchases.announcingAfter(
                response, stored: subscription.state, registrationWindow: registrationWindow, now: now),
            accountID: subscription.accountID)
    }

    /// The write of Apple's answer about `subscription`: analysed on its stored state (and again
    /// on a newer one, should another writer get there first); a receipt the analysis cannot
    /// read is a permanent failure.
    private func analysed(
        _ response: VerifyReceiptResponse, answer: Answer, of subscription: LoadedSubscription, at now: Date, runID: String,
        announcingPurchasesWithin purchaseWindow: TimeInterval?, purchases: PurchaseWrite?
    ) -> Decision {
        do {
            let (write, reanalyse) = try analysedWrite(
                response, of: subscription, attempt: answer.attempt(.verified, at: now, runID: runID), at: now,
                announcingPurchasesWithin: purchaseWindow, purchases: purchases)
            return .write(write, reanalyse: reanalyse, then: .ack(.verified))
        } catch {
            let reason = "\(error)"
            let write = VerificationWrite.permanentFailure(
                of: subscription, reason: reason, attempt: answer.attempt(.permanentFailure, at: now, runID: runID, error: reason))
            return .write(write, reanalyse: nil, then: .ack(.permanentFailure))
        }
    }

    /// What Apple said about `subscription` (an answer, or data Apple signed), analysed on its
    /// stored state, as a write recorded as `attempt`; and the analysis, to redo on a newer stored
    /// state. Throws what the analysis cannot read.
    func analysedWrite(
        _ response: VerifyReceiptResponse, of subscription: LoadedSubscription, attempt: VerificationAttempt, at now: Date,
        announcingPurchasesWithin purchaseWindow: TimeInterval?, purchases: PurchaseWrite?
    ) throws -> (VerificationWrite, reanalyse: (SubscriptionState?) throws -> Analysis) {
        let analyse = { (stored: SubscriptionState?) throws -> Analysis in
            try SubscriptionAnalyzer.analyze(
                stored: stored, response: response, originalTransactionID: subscription.originalTransactionID, now: now,
                announcingPurchasesWithin: purchaseWindow)
        }
        let write = VerificationWrite.analysed(try analyse(subscription.state), of: subscription, attempt: attempt, purchases: purchases)
        return (write, analyse)
    }

    /// Writes a verified answer for every subscription on a registered receipt (already in the
    /// ledger, loaded after the answer), in one transaction, and the receipt's one-time purchases,
    /// which it returns as stored. Throws if any could not be written.
    public func record(
        _ response: VerifyReceiptResponse, answer: Answer, for subscriptions: [LoadedSubscription], purchases: PurchaseWrite,
        runID: String, announcingPurchasesWithin purchaseWindow: TimeInterval?
    ) throws -> RecordedPurchases {
        let now = clock.now()
        let decisions = subscriptions.map {
            analysed(response, answer: answer, of: $0, at: now, runID: runID, announcingPurchasesWithin: purchaseWindow,
                     purchases: nil)
        }
        let (settlements, recorded) = try write(decisions, purchases: purchases)
        for settlement in settlements {
            if case .retry(let failure) = settlement { throw RecordingFailure(failure: failure) }
        }
        return recorded ?? RecordedPurchases(records: [], created: [])
    }

    /// Writes every decision's result in one transaction, and returns how to settle each job now
    /// that its result is durable.
    public func write(_ decisions: [Decision]) throws -> [Settlement] {
        try write(decisions, purchases: nil).settlements
    }

    /// `write(_:)`, with one-time purchases that belong to none of the decisions (a registered receipt's).
    private func write(
        _ decisions: [Decision], purchases: PurchaseWrite?
    ) throws -> (settlements: [Settlement], purchases: RecordedPurchases?) {
        let writes = decisions.compactMap { decision -> VerificationWrite? in
            if case .write(let write, _, _) = decision.verdict { write } else { nil }
        }
        let nightly = policy.nextNightlyRun(after: clock.now())
        let started = ContinuousClock.now
        let written = try store.write(writes, purchases: purchases, nextNightlyRun: nightly)
        var outcomes = written.outcomes[...]
        if !writes.isEmpty { metrics.persisted(in: started.duration(to: .now)) }
        let settlements = try decisions.map { decision in
            switch decision.verdict {
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
            case .judging: preconditionFailure("`verdict` unwraps every judgement")
            }
        }
        // A claim is settled only after what Apple's answer wrote is durable: until then the job
        // is not settled either, and asks again.
        for (decision, settlement) in zip(decisions, settlements) {
            guard case .judging(let judgement, let subscriptionID, let inner) = decision else { continue }
            if case .write = inner.verdict, case .retry = settlement { continue }
            try store.judgeClaims(of: subscriptionID, judgement)
        }
        return (settlements, written.purchases)
    }
}
