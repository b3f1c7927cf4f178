import FleetConfiguration
import JobQueue
import Lanes
import Logging
import ServiceLifecycle

/// Keeps alive the leases of the jobs a worker process holds. A processor holds its batch while it
/// waits for rate-limit slots, for Apple and for PostgreSQL, which can take far longer than the
/// visibility timeout; unrenewed, the batch would be reclaimed and verified again by another worker.
///
/// One per process, renewing every held job in one script every third of the visibility timeout.
/// Only a live process renews: the jobs of one that died come back after the visibility timeout.
/// It stops after the processors, so that jobs they finish during the drain keep their leases.
public struct LeaseKeeper: ProcessDuty {
    public let context: ProcessContext
    let jobs: JobsInHand

    public init(_ context: ProcessContext, jobs: JobsInHand) {
        (self.context, self.jobs) = (context, jobs)
    }

    public func run() async {
        let interval = settings.leaseRenewalInterval
        // Renews in its holders' names, never its own; a failure is tried again soon, well inside the lease.
        await periodically(
            "rf-leases", every: interval, startingNow: false, consumer: JobQueue.consumerName(thread: -2),
            retryingAfter: min(interval, .seconds(1)), failing: "could not renew the leases of held jobs"
        ) { [jobs] queue, _ in
            try queue.renewLeases(of: jobs.held)
        }
    }
}

extension FleetSettings {
    /// How often held jobs' leases are renewed: a third of the visibility timeout.
    var leaseRenewalInterval: Duration { visibilityTimeout / 3 }

    /// Why the visibility timeout is too short for held jobs' leases to outlast a slow Redis, or nil.
    /// A renewal may wait up to twice `redisTimeout` (a command caught writing waits for its write
    /// and then its reply) and must still land before the lease runs out: renewal interval +
    /// 2 × redis-timeout ≤ visibility timeout, that is visibility-timeout ≥ 3 × redis-timeout.
    /// How long a job takes (apple-timeout, rate-limit waits, batch size) does not count: held jobs
    /// are renewed whatever they wait for.
    public var visibilityTimeoutWarning: String? {
        guard leaseRenewalInterval + redisTimeout * 2 > visibilityTimeout else { return nil }
        return "visibility-timeout (\(visibilityTimeout)) is shorter than 3 × redis-timeout (\(redisTimeout * 3)): "
            + "a lease renewal that waits out a slow Redis lands too late, and other workers verify the jobs in hand "
            + "again; raise visibility-timeout or lower redis-timeout (docs/operations.md)"
    }
}
