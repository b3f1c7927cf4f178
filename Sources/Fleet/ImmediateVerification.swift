import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Logging
import VerificationUseCase

/// One subscription verified at once, outside the queue (`receiptfleet verify ID`), by the use
/// case a worker runs (`SubscriptionVerification`): the fleet's halt, pause and rate limit, Apple,
/// the status policy, the analysis and one transaction. Nothing is enqueued or settled in Redis.
public enum ImmediateVerification {
    /// Verifies subscription `id` and says what became of it; Apple's answers are counted and timed in `metrics`.
    public static func run(
        subscriptionID id: Int64, settings: FleetSettings, metrics: FleetMetrics = FleetMetrics(), logger: Logger
    ) throws -> Settlement {
        let connections = try Connections(settings: settings, consumer: JobQueue.consumerName(thread: -5))
        let gate = PacedGate(
            connections: connections, settings: settings, stop: StopSignal(), pauses: PauseBoard(clock: connections.clock),
            slots: SlotPool(tolerance: PacedGate.slotTolerance), metrics: metrics)
        let verification = SubscriptionVerification(
            gate: gate, verifier: connections.apple, store: connections.ledger, policy: settings, metrics: metrics,
            clock: connections.clock, logger: logger)
        let job = Job(subscriptionID: id, runID: "verify", reason: .manual,
                      enqueuedAt: Int64(connections.clock.now().timeIntervalSince1970 * 1000))
        let subscription = try connections.ledger.loadForVerification(ids: [id]).first
        return try verification.write([verification.decide(job, subscription)])[0]
    }
}
