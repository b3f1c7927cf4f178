extension RedisConnection {
    /// Deletes every key whose name starts with `prefix` (a deployment's keys), a SCAN page at a
    /// time so Redis never blocks on one big KEYS. Returns how many were deleted. For tests, the
    /// demo and benchmarks, which each start from a clean deployment; a production fleet never
    /// deletes its keys wholesale.
    @discardableResult
    public func deleteKeys(prefixed prefix: String) throws(RedisError) -> Int {
        let pattern = prefix.reduce(into: "") { escaped, character in
            if "*?[]\\".contains(character) { escaped.append("\\") }
            escaped.append(character)
        } + "*"
        var cursor = "0"
        var deleted = 0
        repeat {
            let reply = try command("SCAN", cursor, "MATCH", pattern, "COUNT", 1000).array ?? []
            cursor = reply.first?.string ?? "0"
            let found = reply.count > 1 ? reply[1].array?.compactMap(\.string) ?? [] : []
            if !found.isEmpty { deleted += Int(try command(["DEL"] + found).int ?? 0) }
        } while cursor != "0"
        return deleted
    }
}
