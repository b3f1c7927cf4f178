import RedisClient
import TestSupport
import Testing

@Suite("Lua scripts through EVALSHA")
struct ScriptTests {
    static let setAndEcho = RedisScript("""
        redis.call('SET', KEYS[1], ARGV[1])
        return {KEYS[1], KEYS[2], redis.call('GET', KEYS[1]), tonumber(ARGV[2]) * 2}
        """)

    @Test("a script runs with KEYS and ARGV, and still runs after SCRIPT FLUSH (NOSCRIPT reloads it)")
    func runsAfterScriptFlush() async throws {
        let key = uniqueName("rc_script")
        let (first, second, stored) = try await withPrivateServer { connection in
            let first = try connection.run(Self.setAndEcho, keys: [key, "\(key):other"], arguments: ["one", 21])
            // Empties the server's script cache while this connection still holds the SHA: the
            // next EVALSHA meets NOSCRIPT and must load the script again.
            try connection.command("SCRIPT", "FLUSH")
            let second = try connection.run(Self.setAndEcho, keys: [key, "\(key):other"], arguments: ["two", 50])
            return (first, second, try connection.command("GET", key))
        }
        #expect(first == .array([.bulk(bytes(key)), .bulk(bytes("\(key):other")), .bulk(bytes("one")), .integer(42)]))
        #expect(second == .array([.bulk(bytes(key)), .bulk(bytes("\(key):other")), .bulk(bytes("two")), .integer(100)]))
        #expect(stored == .bulk(bytes("two")))
    }

    @Test("a script's error reply throws RedisError.server; a nested one stays an .error value")
    func scriptErrors() async throws {
        let (thrown, nested) = try await withConnection { connection in
            (
                Result { () throws(RedisError) in
                    try connection.run(RedisScript("return redis.error_reply('ERR top-level failure')"))
                },
                try connection.run(RedisScript("return {1, redis.error_reply('ERR nested failure')}"))
            )
        }
        guard case .failure(.server(let message)) = thrown else {
            Issue.record("expected RedisError.server, got \(thrown)")
            return
        }
        #expect(message.contains("top-level failure"))
        #expect(nested == .array([.integer(1), .error("ERR nested failure")]))
    }

    @Test("many runs of a script go in one pipeline, and survive SCRIPT FLUSH in between")
    func pipelinedRuns() async throws {
        let key = uniqueName("rc_script_pipeline")
        let (before, after) = try await withPrivateServer { connection in
            let calls = (1...3).map { RedisScriptCall(keys: [key, "b"], arguments: ["v\($0)", $0]) }
            let before = try connection.run(Self.setAndEcho, pipelining: calls)
            try connection.command("SCRIPT", "FLUSH")
            return (before, try connection.run(Self.setAndEcho, pipelining: calls))
        }
        let expected: [RedisValue] = (1...3).map {
            .array([.bulk(bytes(key)), .bulk(bytes("b")), .bulk(bytes("v\($0)")), .integer(Int64($0) * 2)])
        }
        #expect(before == expected)
        #expect(after == expected)
    }
}

/// Runs `body` with a connection to a Redis server of its own: SCRIPT FLUSH on the shared server
/// would empty the script cache under every other test's pipelines.
private func withPrivateServer<T: Sendable>(_ body: @escaping @Sendable (RedisConnection) throws -> T) async throws -> T {
    try await onOwnThread {
        let server = try PrivateRedis()
        defer { server.stop() }
        return try body(RedisConnection(RedisConfiguration(endpoint: .unixSocket(path: server.socket))))
    }
}
