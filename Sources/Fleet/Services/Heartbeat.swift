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
    /// A process that has not reported for three beats is silent: stopped, cut off or dead.
    public static let silentAfter = interval * 3

    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        let startedAt = Int64(clock.now().timeIntervalSince1970 * 1000)
        await every(Self.interval, thread: "rf-heartbeat", startingNow: true, open: { [settings] in
            let connection = try RedisConnection(settings.redisConfiguration())
            let keys = try QueueKeys(prefix: settings.keyPrefix)
            return try (0..<settings.concurrency).map { index in
                try JobQueue(
                    connection: connection, keys: keys, consumer: Processors.consumer(index), preparingGroups: false,
                    clock: settings.scriptClock)
            }
        }, failing: "heartbeat failed") { [settings, metrics] queues, _ in
            for queue in queues { try queue.heartbeat() }
            try queues[0].reportProcess(WorkerProcess(
                name: JobQueue.processName, host: JobQueue.hostName, pid: Int(getpid()), threads: settings.concurrency,
                startedAt: startedAt, jobsDone: metrics.jobsDone))
            try Self.tellSlotsGivenUp(metrics, through: queues[0])
        } last: { [metrics, logger] queues in
            // Stopping: the slots given up since the last beat, or a process that ran for a few
            // seconds would never have its count told; and a goodbye, so that the fleet lists this
            // process no more, unlike one that went silent (its processors still drain).
            do {
                try Self.tellSlotsGivenUp(metrics, through: queues[0])
                try queues[0].forgetProcess(JobQueue.processName)
            } catch {
                logger.warning("could not tell the fleet this process stops", metadata: ["error": "\(error)"])
            }
        }
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
