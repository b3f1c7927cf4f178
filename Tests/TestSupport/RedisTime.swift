import RedisClient

extension RedisConnection {
    /// Redis's clock in µs: the time the queue's scripts read in production, and key expiry follows.
    public func redisMicroseconds() throws -> Int64 {
        let parts = try command("TIME").array ?? []
        return (parts.first?.int ?? 0) * 1_000_000 + (parts.last?.int ?? 0)
    }
}
