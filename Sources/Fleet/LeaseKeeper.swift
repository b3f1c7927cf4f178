import JobQueue
import Lanes
import Logging
import RedisClient
import Synchronization

/// Keeps alive the leases of the jobs a worker process holds. A processor holds its batch while it
/// waits for rate-limit tokens, for Apple and for PostgreSQL, which can take far longer than the
/// visibility timeout; unrenewed, the batch would be reclaimed and verified again by another worker.
///
/// One per process, on a thread of its own (its Redis calls block), renewing every held job in one
/// script every `leaseRenewalInterval`. Only a live process renews: the jobs of one that died come
/// back after the visibility timeout, as before.
final class LeaseKeeper: Sendable {
    private let settings: FleetSettings
    private let logger: Logger
    private let held = Mutex<Set<ReservedJob>>([])
    private let thread = ThreadGroup()

    init(settings: FleetSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Renews `jobs` while `body` runs. Whether `body` settles them or throws and leaves them
    /// reserved, they are let go when it returns, so jobs left behind come back after the
    /// visibility timeout.
    func holding<T>(_ jobs: [ReservedJob], _ body: () throws -> T) rethrows -> T {
        held.withLock { $0.formUnion(jobs) }
        defer { held.withLock { $0.subtract(jobs) } }
        return try body()
    }

    func start() {
        thread.spawn("rf-leases") { [self] stop in run(stop) }
    }

    /// Stops renewing. Call it after the processors have stopped: jobs they still finish during the
    /// drain keep their leases until then.
    func stop() {
        thread.stop(grace: settings.redisTimeout)
    }

    private func run(_ stop: StopSignal) {
        let interval = settings.leaseRenewalInterval
        var queue: JobQueue?
        while !stop.isSet {
            var pause = interval
            do {
                let current = try queue ?? JobQueue(
                    connection: RedisConnection(settings.redisConfiguration()),
                    keys: QueueKeys(prefix: settings.keyPrefix),
                    consumer: JobQueue.consumerName(thread: -2))  // renews in its holders' names, never its own
                queue = current
                try current.renewLeases(of: Array(held.withLock { $0 }))
            } catch {
                // The connection reconnects on the next call; try again soon, well inside the lease.
                logger.error("could not renew the leases of held jobs; retrying", metadata: ["error": "\(error)"])
                pause = min(interval, .seconds(1))
            }
            stop.sleep(pause)
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
