import RedisClient

/// Where the queue's scripts read the time: Redis's clock in production, a clock a test moves in tests.
///
/// Production reads Redis's `TIME`: one clock for every host, which is what makes the rate limit,
/// the pause and the delays fleet-wide. A test reads `driven` instead, so it never sleeps for a
/// pause, a backoff or a time slot to pass: it moves the clock (`QueueKeys.drivenClock`).
///
/// Only the time the scripts read as now is driven. Whatever Redis times itself stays on its own
/// clock: keys' expiry (a probe's lease, a 429's Retry-After, a streak's lifetime, the limiter's
/// state), stream entry ids (so a ready job's age) and the idle times XAUTOCLAIM and XINFO report
/// (so leases and `reclaim`).
public enum ScriptClock: Sendable, Hashable {
    /// Redis's `TIME`: the only clock for production.
    case redis
    /// For tests: the time in µs since the epoch that the key `QueueKeys.drivenClock` holds, standing
    /// still until the test sets it or adds to it. The first script that finds the key missing sets it
    /// to Redis's time.
    case driven
    /// For drills and benchmarks that run whole processes on later days: Redis's `TIME` plus the
    /// shift in µs that the key `QueueKeys.timeShift` holds (none: 0). Time runs as on Redis's
    /// clock, so leases, limits and pauses behave as in production; a harness moves the shift
    /// forward, while the fleet is idle, to stand on a later day (`setting shifted-clock`).
    case shifted
}

/// A script that reads the time: its text on each `ScriptClock`, made once. Its own code follows
/// the clock's prologue (`ScriptPrologue.clock(_:)`), which defines `now`, `nowus` and `nowText`.
/// On the driven clock it is passed the clock's key after its own KEYS (`ScriptClock.keys(of:)`),
/// and the prologue takes that key off again, so the script's own code sees the same KEYS on
/// either clock.
struct ClockedScript: Sendable {
    private let onRedis: RedisScript
    private let driven: RedisScript
    private let shifted: RedisScript

    /// `code`: the prologues the script needs besides the clock's, then its own.
    init(_ code: String) {
        onRedis = RedisScript(ScriptPrologue.clock(.redis) + code)
        driven = RedisScript(ScriptPrologue.clock(.driven) + code)
        shifted = RedisScript(ScriptPrologue.clock(.shifted) + code)
    }

    func text(on clock: ScriptClock) -> RedisScript {
        switch clock {
        case .redis: onRedis
        case .driven: driven
        case .shifted: shifted
        }
    }
}

extension ScriptClock {
    /// The KEYS a clocked script takes after its own on this clock: the driven clock's key, the
    /// shift's, or none.
    func keys(of deployment: QueueKeys) -> [String] {
        switch self {
        case .redis: []
        case .driven: [deployment.drivenClock]
        case .shifted: [deployment.timeShift]
        }
    }
}

/// A handle that runs clocked scripts (`JobQueue`, `FleetGate`, `RateLimiter`): on its `clock`,
/// for its deployment's `keys`.
protocol ClockedScriptRunner {
    var connection: RedisConnection { get }
    var keys: QueueKeys { get }
    var clock: ScriptClock { get }
}

extension ClockedScriptRunner {
    /// Runs `script` on this handle's clock (see `RedisConnection.evaluate(_:keys:arguments:)`).
    @discardableResult
    func evaluate(
        _ script: ClockedScript, keys scriptKeys: [String], arguments: [any RedisArgument] = []
    ) throws(QueueError) -> RedisValue {
        try connection.evaluate(script.text(on: clock), keys: scriptKeys + clock.keys(of: keys), arguments: arguments)
    }

    /// Runs `script` on this handle's clock once per call, in one pipeline (see
    /// `RedisConnection.evaluate(_:pipelining:)`).
    func evaluate(_ script: ClockedScript, pipelining calls: [RedisScriptCall]) throws(QueueError) -> [RedisValue] {
        let clockKeys: [any RedisArgument] = clock.keys(of: keys)
        return try connection.evaluate(
            script.text(on: clock),
            pipelining: calls.map { RedisScriptCall(keys: $0.keys + clockKeys, arguments: $0.arguments) })
    }
}
