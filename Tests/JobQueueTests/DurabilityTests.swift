import JobQueue
import RedisClient
import TestSupport
import Testing

/// The fleet says when its Redis could lose the queue: no append-only log, or eviction allowed.
@Suite(.serialized) struct DurabilityTests {
    @Test func aServerThatCanLoseJobsIsNamedAndASafeOneIsNot() async throws {
        try await onOwnThread {
            let connection = try RedisConnection(RedisConfiguration(url: TestServers.redisURL))
            let before = try connection.command("CONFIG", "GET", "appendonly").array?.last?.string ?? "no"
            defer { _ = try? connection.command("CONFIG", "SET", "appendonly", before) }

            _ = try connection.command("CONFIG", "SET", "appendonly", "no")
            _ = try connection.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
            let unsafe = RedisDurability.warnings(on: connection)
            _ = try connection.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
            #expect(unsafe.count == 2)
            #expect(unsafe.contains { $0.contains("append-only") && $0.contains("receiptfleet schedule") })
            #expect(unsafe.contains { $0.contains("allkeys-lru") })

            _ = try connection.command("CONFIG", "SET", "appendonly", "yes")
            #expect(RedisDurability.warnings(on: connection).isEmpty)
        }
    }
}
