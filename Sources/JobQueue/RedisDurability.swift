import RedisClient

/// What the queue needs from its Redis server to lose nothing: every write on disk (the
/// append-only log), and no key ever evicted to make room. A server that lacks either loses jobs
/// on a restart or under memory pressure, silently; the fleet says so when it starts.
public enum RedisDurability {
    /// One sentence per way `connection`'s server can lose the queue's data, each saying what to
    /// do; empty when it cannot. A managed Redis that forbids CONFIG is said to be unchecked.
    public static func warnings(on connection: RedisConnection) -> [String] {
        var warnings: [String] = []
        let persistence = (try? connection.command("INFO", "persistence").string) ?? ""
        if persistence.contains("aof_enabled:0") {
            warnings.append("Redis runs without the append-only log (appendonly no): a restart loses every queued job; "
                + "set appendonly yes (appendfsync everysec), and after a loss run `receiptfleet schedule` (docs/operations.md)")
        }
        switch try? connection.command("CONFIG", "GET", "maxmemory-policy").array {
        case let reply? where reply.count == 2:
            if let policy = reply[1].string, policy != "noeviction" {
                warnings.append("Redis evicts keys when full (maxmemory-policy \(policy)): queued jobs can vanish; "
                    + "set maxmemory-policy noeviction")
            }
        default:
            warnings.append("could not read Redis's maxmemory-policy (CONFIG is disabled here?); make sure it is noeviction")
        }
        return warnings
    }
}
