import JobQueue
import Lanes
import Logging
import RedisClient
import ServiceLifecycle

/// Takes back, once per process every half visibility timeout, the jobs whose workers died
/// (reserved longer than the visibility timeout and never settled), and leaves them with an idle
/// processor of this process, claimed in its name; jobs delivered too often go to the dead letters.
public struct Reclaimer: ProcessDuty {
    public let context: ProcessContext
    let jobs: JobsInHand

    public init(_ context: ProcessContext, jobs: JobsInHand) {
        (self.context, self.jobs) = (context, jobs)
    }

    public func run() async {
        await every(
            settings.visibilityTimeout / 2, thread: "rf-reclaimer", startingNow: false,
            open: { [settings] in try RedisConnection(settings.redisConfiguration()) },
            failing: "could not reclaim the jobs of dead workers"
        ) { connection, stop in
            try reclaim(over: connection, stop)
        }
    }

    /// Claims for each processor without reclaimed jobs waiting a batch of abandoned ones, until
    /// none is left or every processor has some.
    private func reclaim(over connection: RedisConnection, _ stop: StopSignal) throws {
        let keys = try QueueKeys(prefix: settings.keyPrefix)
        while !stop.isSet, let index = jobs.processorWithoutReclaimedJobs() {
            let queue = try JobQueue(
                connection: connection, keys: keys, consumer: Processors.consumer(index), retryPolicy: settings.retryPolicy,
                preparingGroups: false, clock: settings.scriptClock)
            let reclaimed = try queue.reclaim(
                idleLongerThan: settings.visibilityTimeout, maxDeliveries: settings.maxDeliveries, limit: settings.jobsPerBatch)
            if reclaimed.buried > 0 {
                metrics.settled(.dead, count: reclaimed.buried)
                logger.warning("jobs delivered too often went to the dead letters", metadata: ["count": "\(reclaimed.buried)"])
            }
            guard !reclaimed.jobs.isEmpty else { return }
            jobs.leave(reclaimed.jobs, for: index)
            logger.info("reclaimed the jobs of a worker that stopped answering", metadata: ["count": "\(reclaimed.jobs.count)"])
        }
    }
}
