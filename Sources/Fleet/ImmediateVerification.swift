import Foundation
import JobQueue
import Lanes
import Logging

/// One subscription verified at once, outside the queue (`receiptfleet verify ID`), by the very
/// steps a worker takes: the fleet's halt, pause and rate limit, Apple, the status policy, the
/// analysis and one transaction. Nothing is enqueued or settled in Redis.
public enum ImmediateVerification {
    /// Verifies subscription `id` and says what became of it.
    public static func run(subscriptionID id: Int64, settings: FleetSettings, logger: Logger) throws -> Settlement {
        let connections = try Connections(settings: settings, consumer: JobQueue.consumerName(thread: -5))
        let processor = Processor(
            settings: settings, connections: connections, stop: StopSignal(), pauses: PauseBoard(), metrics: FleetMetrics(),
            logger: logger)
        let job = Job(subscriptionID: id, runID: "verify", reason: .manual,
                      enqueuedAt: Int64(Date().timeIntervalSince1970 * 1000))
        return try processor.verify(job)
    }
}
