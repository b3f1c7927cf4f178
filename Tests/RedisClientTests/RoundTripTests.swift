import RedisClient
import TestSupport
import Testing

@Suite("Commands and replies")
struct RoundTripTests {
    @Test("every RESP2 reply type comes back as the matching RedisValue")
    func replyTypes() async throws {
        let key = uniqueName("rc_types")
        let replies = try await withConnection { connection in
            defer { _ = try? connection.command("DEL", key, "\(key):counter", "\(key):list") }
            return [
                try connection.command("SET", key, "hello"),
                try connection.command("GET", key),
                try connection.command("INCR", "\(key):counter"),
                try connection.command("INCRBY", "\(key):counter", 41),
                try connection.command("GET", "\(key):missing"),
                try connection.command("RPUSH", "\(key):list", "a", "b", "c"),
                try connection.command("LRANGE", "\(key):list", 0, -1),
                try connection.command("LRANGE", "\(key):missing", 0, -1),
                try connection.command("PING"),
            ]
        }
        #expect(replies == [
            .status("OK"),
            .bulk(bytes("hello")),
            .integer(1),
            .integer(42),
            .null,
            .integer(3),
            .array([.bulk(bytes("a")), .bulk(bytes("b")), .bulk(bytes("c"))]),
            .array([]),
            .status("PONG"),
        ])
        #expect(replies[1].string == "hello")
        #expect(replies[3].int == 42)
        #expect(replies[6].array?.count == 3)
    }

    @Test("an error reply throws RedisError.server with Redis's message and leaves the connection usable")
    func errorReply() async throws {
        let key = uniqueName("rc_error")
        let (failure, afterwards) = try await withConnection { connection in
            defer { _ = try? connection.command("DEL", key) }
            try connection.command("SET", key, "not a list")
            let failure = Result { () throws(RedisError) in try connection.command("LPUSH", key, "x") }
            return (failure, try connection.command("GET", key))
        }
        guard case .failure(.server(let message)) = failure else {
            Issue.record("expected RedisError.server, got \(failure)")
            return
        }
        #expect(message.hasPrefix("WRONGTYPE"))
        #expect(afterwards == .bulk(bytes("not a list")))
    }

    @Test("a pipeline of 1,000 commands returns 1,000 replies in order, an error reply kept in place")
    func pipelineOfAThousand() async throws {
        let key = uniqueName("rc_pipeline")
        let failing = 500
        let replies = try await withConnection { connection in
            defer { _ = try? connection.command("DEL", key, "\(key):text") }
            try connection.command("SET", "\(key):text", "not a list")
            let commands: [[any RedisArgument]] = (0..<1_000).map { index in
                index == failing ? ["LPUSH", "\(key):text", "x"] : ["INCR", key]
            }
            return try connection.pipeline(commands)
        }
        try #require(replies.count == 1_000)
        for (index, reply) in replies.enumerated() where index != failing {
            #expect(reply == .integer(Int64(index < failing ? index + 1 : index)), "reply \(index)")
        }
        guard case .error(let message) = replies[failing] else {
            Issue.record("expected an error value at \(failing), got \(replies[failing])")
            return
        }
        #expect(message.hasPrefix("WRONGTYPE"))
    }

    @Test("keys and values with NUL, CR LF and non-UTF-8 bytes round-trip exactly")
    func binarySafety() async throws {
        let key = bytes(uniqueName("rc_binary")) + [0x00, 0xFF, 0xC3, 0x28, 0x0D, 0x0A, 0x00]
        let field: [UInt8] = [0x00, 0x80, 0xFE]
        let value: [UInt8] = Array(0...255) + [0x00, 0x00] + bytes("\r\n$-1\r\n*3\r\n")
        let (stored, hash, empty, otherKey) = try await withConnection { connection in
            defer { _ = try? connection.command("DEL", key, key + [0x01], key + [0x02]) }
            try connection.command("SET", key, value)
            try connection.command("HSET", key + [0x01], field, value)
            try connection.command("SET", key + [0x02], "")
            return (
                try connection.command("GET", key),
                try connection.command("HGETALL", key + [0x01]),
                try connection.command("GET", key + [0x02]),
                try connection.command("EXISTS", Array(key.prefix { $0 != 0 }))
            )
        }
        #expect(stored == .bulk(value))
        #expect(hash == .array([.bulk(field), .bulk(value)]))
        #expect(empty == .bulk([]))
        #expect(otherKey == .integer(0), "the key must not be cut at its first NUL")
        #expect(stored.string == nil, "invalid UTF-8 is not silently repaired")
    }

    @Test("integers, doubles and substrings are sent in the decimal form Redis parses")
    func argumentForms() async throws {
        let key = uniqueName("rc_arguments")
        let replies = try await withConnection { connection in
            defer { _ = try? connection.command("DEL", key) }
            return try connection.pipeline([
                ["ZADD", key, 1.5, "a", Double.infinity, "b", -Double.infinity, "c"],
                ["ZADD", key, Int64(-7), "d", UInt64(7), "e", Int32(0), "f"],
                ["ZRANGE", key, 0, -1],
                ["ZSCORE", key, "a-and-more".prefix(1)],
            ])
        }
        #expect(replies == [
            .integer(3),
            .integer(3),
            .array(["c", "d", "f", "a", "e", "b"].map { .bulk(bytes($0)) }),
            .bulk(bytes("1.5")),
        ])
    }
}
