import CHiredis

/// One RESP2 reply, copied out of hiredis (the C reply is freed as soon as it is copied).
public enum RedisValue: Sendable, Hashable {
    case integer(Int64)
    /// A bulk string: arbitrary bytes, not necessarily UTF-8.
    case bulk([UInt8])
    /// The nil bulk string or nil array (a missing key, an empty BLPOP).
    case null
    case array([RedisValue])
    /// A simple string such as "OK" or "PONG".
    case status(String)
    /// An error reply. At the top level of `command` it is thrown as `RedisError.server`; it appears
    /// as a value only inside pipelines and arrays (e.g. a Lua script's table).
    case error(String)

    /// The text of a bulk string (nil if not valid UTF-8) or of a status.
    public var string: String? {
        switch self {
        case .bulk(let bytes): String(validating: bytes, as: UTF8.self)
        case .status(let text): text
        default: nil
        }
    }

    /// An integer reply, or a bulk string holding a decimal integer (as GET returns a counter).
    public var int: Int64? {
        switch self {
        case .integer(let value): value
        case .bulk: string.flatMap { Int64($0) }
        default: nil
        }
    }

    /// The raw bytes of a bulk string.
    public var bytes: [UInt8]? {
        if case .bulk(let bytes) = self { bytes } else { nil }
    }

    /// The elements of an array reply.
    public var array: [RedisValue]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    /// Deep-copies a hiredis reply; the caller still owns (and frees) `reply`.
    init(copying reply: UnsafePointer<redisReply>) {
        let reply = reply.pointee
        switch reply.type {
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(reply.integer))
        case REDIS_REPLY_STRING:
            self = .bulk(Self.bytes(reply))
        case REDIS_REPLY_NIL:
            self = .null
        case REDIS_REPLY_ARRAY:
            let elements = UnsafeBufferPointer(start: reply.element, count: reply.elements)
            self = .array(elements.map { RedisValue(copying: $0!) })
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: Self.bytes(reply), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: Self.bytes(reply), as: UTF8.self))
        default:
            // hiredis 0.14 speaks RESP2, which has exactly the six types above.
            preconditionFailure("hiredis returned unknown reply type \(reply.type)")
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let start = reply.str else { return [] }
        return start.withMemoryRebound(to: UInt8.self, capacity: reply.len) {
            Array(UnsafeBufferPointer(start: $0, count: reply.len))
        }
    }
}
