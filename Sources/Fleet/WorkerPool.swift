import Foundation
import JobQueue
import Lanes
import Logging

/// A worker process's threads: `concurrency` processors, each with its own connections, one
/// maintenance thread, and the lease keeper that renews the jobs the processors hold. Scaling out
/// is starting more processes; they share nothing but Redis and PostgreSQL.
public final class WorkerPool: Sendable {
    private let settings: FleetSettings
    private let metrics: FleetMetrics
    private let logger: Logger
    private let threads = ThreadGroup()
    private let leases: LeaseKeeper

    public init(settings: FleetSettings, metrics: FleetMetrics = FleetMetrics(), logger: Logger) {
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        leases = LeaseKeeper(settings: settings, logger: logger)
    }

    /// Starts the threads and returns at once. A processor that cannot connect keeps trying.
    public func start() {
        leases.start()
        let pauses = PauseBoard()
        for index in 0..<settings.concurrency {
            threads.spawn("rf-worker-\(index)") { [settings, metrics, logger, leases] stop in
                var logger = logger
                let consumer = JobQueue.consumerName(thread: index)
                logger[metadataKey: "consumer"] = "\(consumer)"
                while !stop.isSet {
                    do {
                        let connections = try Connections(settings: settings, consumer: consumer)
                        Processor(settings: settings, connections: connections, stop: stop, pauses: pauses, metrics: metrics,
                                  logger: logger)
                            .run(keepingLeasesWith: leases)
                    } catch {
                        logger.error("worker cannot connect; retrying in 2 s", metadata: ["error": "\(error)"])
                        stop.sleep(.seconds(2))
                    }
                }
            }
        }
        threads.spawn("rf-maintenance") { [settings, logger] stop in
            Maintenance(settings: settings, stop: stop, logger: logger).run()
        }
        logger.info("worker started", metadata: ["concurrency": "\(settings.concurrency)"])
    }

    /// Stops reserving, lets the jobs in hand finish for up to `grace`, and returns whether every
    /// thread finished in time. Jobs still running at the deadline are left reserved, never acked:
    /// other workers reclaim them after the visibility timeout, since their leases are renewed no more.
    @discardableResult
    public func drain(grace: Duration) -> Bool {
        defer { leases.stop() }
        return threads.stop(grace: grace)
    }
}
