import EventRelay
import Fleet
import FleetConfiguration
import JobQueue
import Lanes
import Ledger
import Operations
import PostgresClient
import RedisClient

/// A console lane's own connections: everything a page reads or an action changes, used from
/// that lane's thread only. `status` is the reading `receiptfleet status` and the metrics use.
final class ConsoleDesk {
    let status: FleetStatusReader
    let store: ConsoleStore
    let queue: JobQueue
    let timings: FleetTimings
    let gate: FleetGate
    let ledger: Ledger
    let webhooks: WebhookRegistry
    let settings: FleetSettings

    /// How long a page waits for Redis: an operator is looking, and a page that says Redis is not
    /// answering beats one that never comes.
    static let redisDeadline = Duration.seconds(1)

    init(settings: FleetSettings, clock: any FleetClock) throws {
        var settings = settings
        settings.redisTimeout = min(settings.redisTimeout, Self.redisDeadline)
        self.settings = settings
        status = FleetStatusReader(settings: settings, clock: clock)
        let redis = try RedisConnection(settings.redisConfiguration())
        let keys = try QueueKeys(prefix: settings.keyPrefix)
        store = ConsoleStore(connection: redis, prefix: settings.keyPrefix)
        queue = try JobQueue(connection: redis, keys: keys, consumer: JobQueue.consumerName(thread: -8), clock: settings.scriptClock)
        gate = FleetGate(connection: redis, keys: keys, limit: settings.rateLimit, clock: settings.scriptClock)
        timings = FleetTimings(connection: redis, keys: keys)
        let database = try PostgresConnection(configuration: settings.postgresConfiguration())
        ledger = Ledger(database)
        webhooks = WebhookRegistry(database: database)
    }
}
