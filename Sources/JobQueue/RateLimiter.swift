import RedisClient

/// A fleet-wide rate: at most `perSecond` tokens per second on average, and at most
/// `burst` + `perSecond`·t in any window of t seconds, summed over every process.
public struct RateLimit: Sendable, Hashable {
    public let perSecond: Double
    /// Tokens that may be taken at once after a quiet spell.
    public let burst: Int

    public init(perSecond: Double, burst: Int) throws(QueueError) {
        guard perSecond.isFinite, perSecond > 0, perSecond <= 1_000_000 else {
            throw .invalidArgument("a rate must be more than 0 and at most 1,000,000 per second, not \(perSecond)")
        }
        guard burst >= 1 else { throw .invalidArgument("a burst must be at least 1, not \(burst)") }
        self.perSecond = perSecond
        self.burst = burst
    }

    /// 1% of the rate, at least 1: after a quiet spell the fleet may call Apple this many times at
    /// once, so no second sees more than 1% above the limit (a burst of 10 at 50/s would allow 20%).
    public static func defaultBurst(perSecond: Double) -> Int { max(1, Int(perSecond / 100)) }

    /// The time one token stands for, in whole µs (the limiter's integer arithmetic works in µs).
    var intervalMicroseconds: Int64 { max(1, Int64((1_000_000 / perSecond).rounded())) }
}

/// One API client's GCRA bucket on Redis (one Lua script each call, Redis's clock), shared by
/// every `serve` replica, so N replicas allow a client the limit, not N times it. (The fleet's
/// bucket for Apple is `FleetGate`'s, which checks pause and halt in the same round trip.)
///
/// Like every handle here it blocks on its thread's own connection, so it is not `Sendable`.
public final class RateLimiter: ClockedScriptRunner {
    public let limit: RateLimit
    /// The clock its script reads: `.redis`, or `.driven` in tests.
    public let clock: ScriptClock
    let keys: QueueKeys
    let connection: RedisConnection

    public init(connection: RedisConnection, keys: QueueKeys, limit: RateLimit, clock: ScriptClock = .redis) {
        self.connection = connection
        self.keys = keys
        self.limit = limit
        self.clock = clock
    }

    /// Admits one request of one API client (a token's name, or a caller's address), fleet-wide:
    /// every `serve` replica charges the same bucket. KEYS[1] the client's limiter state, KEYS[2]
    /// admitted counter. ARGV[1] interval µs, ARGV[2] burst.
    /// Returns µs to wait, 0 when admitted.
    private static let admitClientScript = ClockedScript(ScriptPrologue.reserve + """
        local slots, wait = reserve(KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]), 1, 0)
        if #slots > 0 then return 0 end
        return math.max(1, wait)
        """)

    /// Admits one request of an API client ("token:<name>" or "address:<ip>") at `limit` (nil), or
    /// says how long it must wait.
    public func admit(client: String) throws(QueueError) -> Duration? {
        let reply = try evaluate(
            Self.admitClientScript, keys: [keys.clientLimiter(client), keys.clientLimiterAdmitted],
            arguments: [limit.intervalMicroseconds, limit.burst])
        guard let wait = reply.int else { throw .unexpectedReply(operation: "admit client", reply: "\(reply)") }
        return wait == 0 ? nil : .microseconds(wait)
    }
}
