import Fleet
import FleetConfiguration
import JobQueue
import RedisClient

/// Ways the configured Redis could lose the queue (`RedisDurability`), for `worker` and
/// `config check` to say. Blocking: call it off Swift's cooperative pool.
func redisDurabilityWarnings(_ settings: FleetSettings) throws -> [String] {
    RedisDurability.warnings(on: try RedisConnection(settings.redisConfiguration()))
}
