import Foundation
import JobQueue
import Lanes
import Logging
import RedisClient
import ServiceLifecycle

/// Tells the fleet every 5 s that this process's processors are alive (`QueueStats.liveWorkers`,
/// the live-worker gauge), what the process is (`WorkerProcess`: the console's workers page), and
/// how many rate-limit slots they gave up since (`StarvedWorker`: `status` and the console name a
/// starved process). It stops before the processors drain, so that their deregistration is the last
/// word; as it stops, it tells the slots given up since its last beat.
public struct Heartbeat: ProcessDuty {
    static let interval = Duration.seconds(5)

    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        let startedAt = Int64(Date().timeIntervalSince1970 * 1000)
        await ThreadService("rf-heartbeat", grace: settings.redisTimeout * 2, logger: logger) { _, stop in
            var queues: [JobQueue] = []
            repeat {
                do {
                    if queues.isEmpty {
                        let connection = try RedisConnection(settings.redisConfiguration())
                        let keys = try QueueKeys(prefix: settings.keyPrefix)
                        queues = try (0..<settings.concurrency).map { index in
                            try JobQueue(connection: connection, keys: keys, consumer: Processors.consumer(index), preparingGroups: false)
                        }
                    }
                    for queue in queues { try queue.heartbeat() }
                    try queues[0].reportProcess(WorkerProcess(
                        name: JobQueue.processName, host: JobQueue.hostName, pid: Int(getpid()), threads: settings.concurrency,
                        startedAt: startedAt, jobsDone: metrics.jobsDone))
                    try Self.tellSlotsGivenUp(metrics, through: queues[0])
                } catch {
                    logger.error("heartbeat failed; trying again", metadata: ["error": "\(error)"])
                    queues = []
                }
            } while stop.sleep(Self.interval)
            // Stopping: the slots given up since the last beat, or a process that ran for a few
            // seconds would never have its count told.
            guard let queue = queues.first else { return }
            do {
                try Self.tellSlotsGivenUp(metrics, through: queue)
            } catch {
                logger.warning("could not tell the fleet the slots given up since the last heartbeat", metadata: ["error": "\(error)"])
            }
        }.run()
    }

    /// Tells the fleet the slots this process gave up since the last time. When Redis fails they
    /// wait for the next heartbeat instead of being lost: a starved process is often one whose
    /// Redis calls time out too.
    static func tellSlotsGivenUp(_ metrics: FleetMetrics, through queue: JobQueue) throws(QueueError) {
        let givenUp = metrics.takeSlotsGivenUp()
        guard givenUp > 0 else { return }
        do {
            try queue.reportSlotsGivenUp(givenUp, by: JobQueue.processName)
        } catch {
            metrics.putBackSlotsGivenUp(givenUp)
            throw error
        }
    }
}
