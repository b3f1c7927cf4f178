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

    /// The time one token stands for, in whole µs (the limiter's integer arithmetic works in µs).
    var intervalMicroseconds: Int64 { max(1, Int64((1_000_000 / perSecond).rounded())) }
}

/// The answer to a request for tokens.
public struct Grant: Sendable, Hashable {
    /// Tokens granted, 0...wanted.
    public let granted: Int
    /// When the next token will be available. With nothing granted, sleep this long plus a
    /// little random jitter (so waiting workers do not all ask again at the same instant).
    public let retryAfter: Duration
}

/// GCRA buckets on Redis (one Lua script each call, Redis's clock), shared by every process:
/// `acquire` takes from the fleet's bucket for Apple (workers calling Apple use `FleetGate`,
/// which checks pause and halt in the same round trip); `admit(client:)` from one API client's,
/// so N `serve` replicas allow a client the limit, not N times it.
///
/// Like every handle here it blocks on its thread's own connection, so it is not `Sendable`.
public final class RateLimiter {
    public let limit: RateLimit
    let keys: QueueKeys
    let connection: RedisConnection

    public init(connection: RedisConnection, keys: QueueKeys, limit: RateLimit) {
        self.connection = connection
        self.keys = keys
        self.limit = limit
    }

    /// Takes up to `wanted` tokens at once (fewer, or none, when the fleet is at its rate).
    public func acquire(upTo wanted: Int) throws(QueueError) -> Grant {
        guard wanted >= 1 else { throw .invalidArgument("acquire at least 1 token, not \(wanted)") }
        let reply = try connection.evaluate(
            Scripts.acquire, keys: [keys.limiter, keys.limiterGranted],
            arguments: [limit.intervalMicroseconds, limit.burst, wanted])
        guard let parts = reply.array, parts.count == 2, let granted = parts[0].int, let wait = parts[1].int else {
            throw .unexpectedReply(operation: "acquire", reply: "\(reply)")
        }
        return Grant(granted: Int(granted), retryAfter: .microseconds(wait))
    }

    /// Admits one request of an API client ("token:<name>" or "address:<ip>") at `limit` (nil), or
    /// says how long it must wait.
    public func admit(client: String) throws(QueueError) -> Duration? {
        let reply = try connection.evaluate(
            Scripts.admitClient, keys: [keys.clientLimiter(client), keys.clientLimiterAdmitted],
            arguments: [limit.intervalMicroseconds, limit.burst])
        guard let wait = reply.int else { throw .unexpectedReply(operation: "admit client", reply: "\(reply)") }
        return wait == 0 ? nil : .microseconds(wait)
    }
}
