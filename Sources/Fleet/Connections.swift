import FleetConfiguration
import Lanes
import JobQueue
import Ledger
import PostgresClient
import RedisClient

/// One thread's own connections and the handles over them: a fleet worker's, or an API lane's.
/// Created on that thread and never shared: each is a blocking, non-`Sendable` handle.
public final class Connections {
    public let queue: JobQueue
    public let gate: FleetGate
    public let ledger: Ledger
    public let apple: AppleClients
    /// The time the domain reads (verifications, entitlements, schedules) and the thread waits on:
    /// the process's (`ProcessContext.clock`).
    public let clock: any FleetClock

    /// `enqueueOnly`: for the API's lanes, which never reserve jobs. Their Redis connection opens
    /// on first use, so they come up, and serve what needs only PostgreSQL, while Redis is down.
    /// `clock`: the process's; nil for the one the settings name (`FleetSettings.processClock`).
    public init(settings: FleetSettings, consumer: String, enqueueOnly: Bool = false, clock: (any FleetClock)? = nil) throws {
        let redis = try RedisConnection(settings.redisConfiguration(), connectingNow: !enqueueOnly)
        let keys = try QueueKeys(prefix: settings.keyPrefix)
        queue = try JobQueue(
            connection: redis, keys: keys, consumer: consumer, retryPolicy: settings.retryPolicy, preparingGroups: !enqueueOnly,
            clock: settings.scriptClock)
        gate = FleetGate(
            connection: redis, keys: keys, limit: settings.rateLimit, pausePolicy: settings.pausePolicy, clock: settings.scriptClock)
        let postgres = try PostgresConnection(configuration: settings.postgresConfiguration())
        ledger = Ledger(postgres, schedule: settings.checkSchedule)
        let clock = clock ?? settings.processClock()
        apple = try AppleClients(settings: settings, clock: clock)
        self.clock = clock
    }
}
