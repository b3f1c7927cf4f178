import Lanes
import AppStore
import AppStoreClients
import Foundation
import JobQueue
import Ledger
import Logging

/// One worker: a dedicated thread that reserves jobs, verifies their subscriptions with Apple
/// under the fleet's rate limit, pause and halt, writes the results to PostgreSQL in one
/// transaction per batch, and only then settles the jobs in Redis.
///
/// A job leaves Redis only after its result is durable, or atomically moved to the delayed set or
/// the dead letters; a worker that dies holding jobs leaves them to be reclaimed.
final class Processor {
    private let settings: FleetSettings
    private let connections: Connections
    private let stop: StopSignal
    private let pauses: PauseBoard
    private let metrics: FleetMetrics
    private let logger: Logger
    private let policy = StatusPolicy()
    private var lastReclaim = ContinuousClock.now
    private var lastHeartbeat = ContinuousClock.now - .seconds(60)
    /// Set when the gate is paused or halted: how long to rest before reserving more jobs, so a
    /// stopped fleet does not churn its backlog through the delayed set.
    private var restBeforeNextBatch: Duration?
    /// What this worker's last call got from Apple: the next admission says so, which ends the
    /// fleet's streak of unavailable answers (and, for an answer about a receipt, of configuration errors).
    private var lastAnswer = LastAnswer.none
    /// Slots booked for the batch's next calls and not used yet, earliest first.
    private var bookedSlots: [ContinuousClock.Instant] = []
    /// What this worker's last call to Apple took: how many calls it can make back to back.
    private var lastCallDuration = Duration.seconds(1)
    /// How long a worker rests when the fleet is halted before it looks again.
    private static let haltedRest = Duration.seconds(5)

    /// How far ahead a worker may book its time slot for Apple. Far enough that every thread of a
    /// large fleet holds one (3 processes × 512 threads at 400/s book 3.8 s ahead), so waiting
    /// threads sleep until their slot instead of asking Redis again; a worker stopped during its
    /// sleep wastes its slot, which costs the fleet one call.
    static let bookingHorizon = Duration.seconds(10)
    /// How much later than its slot a worker may make a call booked ahead with others: any second
    /// then sees at most limit + burst + 1% (10 ms of the rate).
    static let slotTolerance = Duration.milliseconds(10)

    init(
        settings: FleetSettings, connections: Connections, stop: StopSignal, pauses: PauseBoard, metrics: FleetMetrics,
        logger: Logger
    ) {
        self.settings = settings
        self.connections = connections
        self.stop = stop
        self.pauses = pauses
        self.metrics = metrics
        self.logger = logger
    }

    /// Works until the stop signal is set, then finishes the batch in hand and deregisters.
    /// `leases` renews each batch's jobs while they are in hand, however long Apple takes.
    func run(keepingLeasesWith leases: LeaseKeeper) {
        while !stop.isSet {
            do {
                try heartbeatIfDue()
                let jobs = try nextBatch()
                if !jobs.isEmpty { try leases.holding(jobs) { try process(jobs) } }
                if let rest = restBeforeNextBatch {
                    restBeforeNextBatch = nil
                    stop.sleep(rest)
                }
            } catch {
                // A broken connection reconnects on the next call; held jobs are reclaimed later.
                logger.error("worker step failed; retrying in 1 s", metadata: ["error": "\(error)"])
                stop.sleep(.seconds(1))
            }
        }
        do {
            _ = try connections.queue.deregister()
        } catch {
            logger.warning("could not deregister the consumer", metadata: ["error": "\(error)"])
        }
    }

    private func heartbeatIfDue() throws {
        guard lastHeartbeat.duration(to: .now) >= .seconds(5) else { return }
        try connections.queue.heartbeat()
        lastHeartbeat = .now
    }

    /// Jobs whose workers died come first (every half visibility timeout), then new ones.
    private func nextBatch() throws -> [ReservedJob] {
        if lastReclaim.duration(to: .now) >= settings.visibilityTimeout / 2 {
            lastReclaim = .now
            let reclaimed = try connections.queue.reclaim(
                idleLongerThan: settings.visibilityTimeout, maxDeliveries: settings.maxDeliveries,
                limit: settings.batchSize)
            if reclaimed.buried > 0 {
                metrics.settled(.dead, count: reclaimed.buried)
                logger.warning("jobs delivered too often went to the dead letters", metadata: ["count": "\(reclaimed.buried)"])
            }
            if !reclaimed.jobs.isEmpty { return reclaimed.jobs }
        }
        return try connections.queue.reserve(count: settings.batchSize, block: .seconds(1))
    }

    private func process(_ jobs: [ReservedJob]) throws {
        let loaded = try connections.ledger.loadForVerification(ids: jobs.map(\.job.subscriptionID))
        let subscriptions = Dictionary(loaded.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var decisions: [(ReservedJob, Decision)] = []
        for (index, job) in jobs.enumerated() {
            guard !stop.isSet else {
                decisions.append((job, .settle(.postpone(.zero))))  // another worker takes it at once
                continue
            }
            decisions.append((job, try decide(job.job, subscriptions[job.job.subscriptionID], upcoming: jobs.count - index)))
        }
        bookedSlots.removeAll()  // booked for jobs that needed no call: one call less for the fleet
        let settled = Array(zip(decisions.map(\.0), try write(decisions.map(\.1))))
        for (reserved, settlement) in settled {
            if reserved.job.reason == .registration, case .ack(.verified) = settlement,
               let receipt = subscriptions[reserved.job.subscriptionID]?.receipt {
                // Apple has now shown this receipt to hold the subscription: the registration that
                // was queued with it (Apple could not be asked then) may link its account.
                try connections.ledger.resolveClaims(of: reserved.job.subscriptionID, receiptSHA256: receipt.sha256Hex)
            }
        }
        try settle(settled)
    }

    /// Verifies one subscription now, outside the queue (`receiptfleet verify ID`): the same steps
    /// as for a reserved job, up to the settlement, which is returned instead of applied.
    func verify(_ job: Job) throws -> Settlement {
        let subscription = try connections.ledger.loadForVerification(ids: [job.subscriptionID]).first
        return try write([decide(job, subscription)])[0]
    }

    /// What to do with one job: verify its subscription, unless there is nothing to verify.
    /// `upcoming` counts this job and the batch's jobs after it: calls this worker may book at once.
    private func decide(_ job: Job, _ subscription: LoadedSubscription?, upcoming: Int = 1) throws -> Decision {
        guard let subscription else { return .settle(.ack(.skipped)) }  // deleted since it was enqueued
        guard let receipt = subscription.receipt else {
            return .settle(.bury(JobFailure(errorClass: "no_receipt", message: "no receipt is stored for this subscription")))
        }
        if let verified = subscription.lastVerifiedAt, !job.reason.isHighPriority,
            verified.timeIntervalSince1970 * 1000 > Double(job.enqueuedAt)
        {
            return .settle(.ack(.skipped))  // verified since it was enqueued (an older run's job, say)
        }
        let admission = try admit(upTo: upcoming)
        guard !stop.isSet else { return .settle(.postpone(.zero)) }  // woke from its slot to stop
        switch admission {
        case .paused(let wait):
            restBeforeNextBatch = wait.withJitter()
            return .settle(.postpone(wait.withJitter()))
        case .halted:
            restBeforeNextBatch = Self.haltedRest
            return .settle(.postpone(.seconds(30)))
        case .probe: metrics.probed()
        case .granted, .wait: break
        }
        var probing = admission == .probe
        let calling = ContinuousClock.now
        let verification = connections.appStore.verify(
            receipt, sharedSecret: settings.sharedSecret, startingIn: subscription.environment,
            mayRedirect: {
                switch try? admit() {
                case .granted?: return !stop.isSet
                case .probe?:
                    metrics.probed()
                    probing = true
                    return !stop.isSet
                default: return false  // the job is retried, the redirect with it
                }
            })
        lastCallDuration = calling.duration(to: .now) / verification.exchanges.count
        for exchange in verification.exchanges { metrics.answered(exchange) }
        return try judge(verification, of: subscription, job: job, probing: probing)
    }

    /// How many of `upcoming` calls to book in one admission: as many as fit back to back, at the
    /// last call's pace, within `slotTolerance` of the first one's slot; at least one.
    static func callsToBook(upcoming: Int, lastCall: Duration) -> Int {
        max(1, min(upcoming, Int(slotTolerance / max(lastCall, .microseconds(1)))))
    }

    /// Asks the gate until it admits, pauses or halts. A granted call waits here for its time
    /// slot; a pause that another worker of this process learned of meanwhile turns it into `.paused`.
    ///
    /// When calls are quick (Apple near, the limit far), one admission books slots for several of
    /// the batch's calls: as many as this worker can make back to back within `slotTolerance`, so
    /// none is used much later than its slot (late calls could bunch above the limit). A booked
    /// slot that the worker comes too late for anyway is given up, not used.
    private func admit(upTo upcoming: Int = 1) throws -> Admission {
        while let slot = bookedSlots.first {
            bookedSlots.removeFirst()
            let now = ContinuousClock.now
            guard now <= slot + Self.slotTolerance else { continue }
            stop.sleep(now.duration(to: slot))
            if let pause = pauses.remaining() { return .paused(pause) }
            return .granted(slots: [.zero])
        }
        let wanted = Self.callsToBook(upcoming: upcoming, lastCall: lastCallDuration)
        while true {
            let asked = ContinuousClock.now
            let admission = try connections.gate.admit(upTo: wanted, within: Self.bookingHorizon, after: lastAnswer)
            lastAnswer = .none
            switch admission {
            case .wait(let wait):
                // Every slot within the horizon is booked: far more threads than the rate can serve.
                // Spread over a second, so they do not all ask again at the same instant.
                stop.sleep(wait + .milliseconds(Int.random(in: 0...1000)))
                metrics.waitedForToken(asked.duration(to: .now))
                continue
            case .granted(let slots):
                let booked = ContinuousClock.now
                bookedSlots = slots.dropFirst().map { booked + $0 }
                stop.sleep(slots[0])
                metrics.waitedForToken(asked.duration(to: .now))
                if let pause = pauses.remaining() { return .paused(pause) }
            case .paused(let wait): pauses.note(pausedFor: wait)
            case .halted: pauses.note(pausedFor: Self.haltedRest)
            case .probe: break
            }
            return admission
        }
    }

    /// Turns Apple's answer into a write and a settlement, by the status policy.
    private func judge(
        _ verification: Verification, of subscription: LoadedSubscription, job: Job, probing: Bool
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
        lastAnswer = action.lastAnswer
        if probing, action.meansAppleAnswered {
            try connections.gate.reportRecovered()
            pauses.clear()
        }

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
            switch try connections.reportUnanswered(action, exchange, settings: settings) {
            case .counted(let wait): pause = wait
            case .halted(let reason): return halted(reason)
            }
            // A stray failure among good answers: this job alone tries again later.
            guard pause > .zero else { return retryAlone() }
            pauses.note(pausedFor: pause)
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
                let confirmed = try connections.gate.reportConfigurationError(
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
            try connections.gate.halt(reason: named)
            return halted(named)
        }
    }

    /// This job's call halted the fleet for `reason`: raise the alarm; the job waits for `resume`.
    private func halted(_ reason: String) -> Decision {
        pauses.note(pausedFor: Self.haltedRest)
        logger.critical("the fleet is halted by a configuration error; fix it, then run `receiptfleet resume`",
                        metadata: ["reason": "\(reason)"])
        return .settle(.postpone(.seconds(30)))
    }

    /// Writes every decision's result in one transaction, and returns how to settle each job now
    /// that its result is durable.
    private func write(_ decisions: [Decision]) throws -> [Settlement] {
        let writes = decisions.compactMap { decision -> VerificationWrite? in
            if case .write(let write, _, _) = decision { write } else { nil }
        }
        let nightly = settings.nextNightlyRun(after: Date())
        let started = ContinuousClock.now
        var outcomes = try connections.ledger.persist(writes, nextNightlyRun: nightly)[...]
        if !writes.isEmpty { metrics.persisted(in: started.duration(to: .now)) }
        return try decisions.map { decision in
            switch decision {
            case .settle(let settlement):
                return settlement
            case .write(let write, let reanalyse, let then):
                var outcome = outcomes.popFirst()!
                if case .stale = outcome, let reanalyse {
                    outcome = try connections.ledger.persist(write, nextNightlyRun: nightly, reanalysing: reanalyse)
                }
                switch outcome {
                case .written, .missing: return then
                case .stale: return .retry(JobFailure(errorClass: "stale", message: "lost the compare-and-set three times"))
                case .failed(let error): return .retry(JobFailure(errorClass: "database", message: "\(error)"))
                }
            }
        }
    }

    /// Settles a batch's jobs in Redis, its finished ones in one round trip, and counts each,
    /// unless another worker reclaimed it meanwhile (then nothing changed here, and the job is that
    /// worker's to settle and count).
    private func settle(_ settled: [(ReservedJob, Settlement)]) throws {
        let queue = connections.queue
        var finished: [(ReservedJob, FleetMetrics.JobOutcome)] = []
        for (reserved, settlement) in settled {
            let outcome: FleetMetrics.JobOutcome?
            switch settlement {
            case .ack(let done):
                finished.append((reserved, done))
                continue
            case .postpone(let delay): outcome = try queue.postpone(reserved, for: delay) ? .postponed : nil
            case .retry(let failure):
                switch try queue.retry(reserved, after: failure) {
                case .delayed: outcome = .retried
                case .buried:
                    outcome = .dead
                    logger.warning("a job ran out of attempts and went to the dead letters",
                                   metadata: ["subscription": "\(reserved.job.subscriptionID)", "error": "\(failure.errorClass)"])
                case .notReserved: outcome = nil
                }
            case .bury(let failure): outcome = try queue.bury(reserved, failure: failure) ? .dead : nil
            }
            if let outcome { metrics.settled(outcome) }
        }
        let acked: [Bool] = try queue.ack(finished.map { $0.0 })
        for ((_, done), acked) in zip(finished, acked) where acked { metrics.settled(done) }
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
