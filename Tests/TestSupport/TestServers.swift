import Foundation

/// Where the tests find their servers. `scripts/services up` starts them and prints these
/// addresses; the defaults below match it, so `swift test` works without exporting anything.
public enum TestServers {
    public static var redisURL: String {
        env("RECEIPTFLEET_REDIS_URL") ?? "redis://:receiptfleet-dev@127.0.0.1:16379/0"
    }

    /// The Redis server's unix socket, for tests of socket connections.
    public static var redisSocket: String {
        env("RECEIPTFLEET_REDIS_SOCKET") ?? repositoryRoot + "/.run/redis/redis.sock"
    }

    /// The checkout this file belongs to (where `scripts/services` keeps its run folder).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    public static var postgresURL: String {
        env("RECEIPTFLEET_POSTGRES_URL")
            ?? "postgresql://receiptfleet:receiptfleet-dev@127.0.0.1:15432/receiptfleet"
    }

    /// PgBouncer in transaction pooling mode in front of the same server.
    public static var pgbouncerURL: String {
        env("RECEIPTFLEET_PGBOUNCER_URL")
            ?? "postgresql://receiptfleet:receiptfleet-dev@127.0.0.1:15433/receiptfleet?sslmode=disable"
    }

    private static func env(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }
}

/// A name no other test (or earlier run) uses: for Redis keys, schemas, tables.
public func uniqueName(_ prefix: String) -> String {
    "\(prefix)_\(UInt64.random(in: 0...UInt64.max) % 1_000_000_000_000)"
}
