import FleetConfiguration
import Lanes
import Foundation
import JobQueue
import Ledger
import Logging
import VerificationUseCase

/// One worker: a dedicated thread that reserves jobs, verifies their subscriptions
/// (`SubscriptionVerification`, paced by its `PacedGate`), writes the results to PostgreSQL in
/// one transaction per batch, and only then settles the jobs in Redis.
///
/// A job leaves Redis only after its result is durable, or atomically moved to the delayed set or
/// the dead letters; a worker that dies holding jobs leaves them to be reclaimed.
final class Processor {
    /// How long a batch should take at the last call's pace: quick calls share a batch's round trips
    /// (up to `jobs-per-batch` of them), while slow ones leave a small backlog to the other threads
    /// and bring a retried job back sooner.
    static let batchSpan = Duration.seconds(1)

    /// Which of the process's processors this is (`Processors.consumer(index)` names it).
    private let index: Int
    private let settings: FleetSettings
    private let connections: Connections
    private let stop: StopSignal
    private let jobs: JobsInHand
    private let metrics: FleetMetrics
    private let logger: Logger
    private let gate: PacedGate
    private let verification: SubscriptionVerification

    init(
        index: Int, settings: FleetSettings, connections: Connections, stop: StopSignal, pauses: PauseBoard, slots: SlotPool,
        jobs: JobsInHand, metrics: FleetMetrics, logger: Logger
    ) {
        self.index = index
        self.settings = settings
        self.connections = connections
        self.stop = stop
        self.jobs = jobs
        self.metrics = metrics
        self.logger = logger
        gate = PacedGate(connections: connections, settings: settings, stop: stop, pauses: pauses, slots: slots, metrics: metrics)
        verification = SubscriptionVerification(
            gate: gate, verifier: connections.apple, store: connections.ledger, policy: settings, metrics: metrics,
            clock: connections.clock, logger: logger)
    }

    /// Works until the stop signal is set, then finishes the batch in hand and deregisters.
    /// Each batch is held in `jobs` while in hand, so the lease keeper renews it however long Apple takes.
    func run() {
        while !stop.isSet {
            do {
                let batch = try nextBatch()
                if !batch.isEmpty { try jobs.holding(batch) { try process(batch) } }
                if let rest = gate.endBatch() { connections.clock.sleep(rest, unless: stop) }
            } catch {
                // A broken connection reconnects on the next call; held jobs are reclaimed later.
                logger.error("worker step failed; retrying in 1 s", metadata: ["error": "\(error)"])
                connections.clock.sleep(.seconds(1), unless: stop)
            }
        }
        do {
            _ = try connections.queue.deregister()
        } catch {
            logger.warning("could not deregister the consumer", metadata: ["error": "\(error)"])
        }
    }

    /// Jobs the reclaimer took back for this processor come first, then new ones.
    private func nextBatch() throws -> [ReservedJob] {
        let reclaimed = jobs.takeReclaimed(for: index)
        if !reclaimed.isEmpty { return reclaimed }
        return try connections.queue.reserve(
            count: Self.batchSize(upTo: settings.jobsPerBatch, lastCall: gate.lastCallDuration), block: .seconds(1))
    }

    /// As many jobs as the thread verifies within `batchSpan` at the last call's pace: at least one,
    /// at most `limit`.
    static func batchSize(upTo limit: Int, lastCall: Duration) -> Int {
        lastCall.callsFitting(in: batchSpan, atMost: limit)
    }

    private func process(_ batch: [ReservedJob]) throws {
        let loaded = try connections.ledger.loadForVerification(ids: batch.map(\.job.subscriptionID))
        let subscriptions = Dictionary(loaded.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var decisions: [(ReservedJob, Decision)] = []
        for (position, job) in batch.enumerated() {
            guard !stop.isSet else {
                decisions.append((job, .settle(.postpone(.zero))))  // another worker takes it at once
                continue
            }
            let decision = try verification.decide(job.job, subscriptions[job.job.subscriptionID], upcoming: batch.count - position)
            decisions.append((job, decision))
        }
        try settle(Array(zip(decisions.map(\.0), try verification.write(decisions.map(\.1)))))
    }

    /// Settles a batch's jobs in Redis, its finished ones in one round trip, and counts each (a
    /// finished one with its time from first enqueue to done),
    /// unless another worker reclaimed it meanwhile (then nothing changed here, and the job is that
    /// worker's to settle and count).
    private func settle(_ settled: [(ReservedJob, Settlement)]) throws {
        let queue = connections.queue
        var finished: [(ReservedJob, JobOutcome)] = []
        for (reserved, settlement) in settled {
            let outcome: JobOutcome?
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
        let ages = try queue.ack(finished.map { $0.0 })
        for ((_, done), age) in zip(finished, ages) {
            if let age { metrics.finished(done, after: age) }
        }
    }
}
