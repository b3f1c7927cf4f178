import RedisClient

/// How the fleet backs off together while Apple is unavailable.
public struct PausePolicy: Sendable, Hashable {
    /// The first pause; each consecutive one doubles, up to `cap`.
    public let base: Duration
    public let cap: Duration
    /// How long the one probing worker may take to report before another may probe: longer than
    /// one call to Apple, timeouts included.
    public let probeLease: Duration
    /// How many unavailable answers in a row, fleet-wide, start a pause. A stray 502 or timeout
    /// among good answers is retried alone; pausing the fleet for it would cost far more.
    public let streak: Int

    /// A pause after 5 unavailable answers in a row; pauses of 2 s, then 3 s; a probe may take a
    /// minute. One probe every 3 s is nothing to Apple, and the fleet is back at full rate within
    /// seconds of Apple's recovery, however long the outage lasted.
    public static let standard = PausePolicy(
        checkedBase: .seconds(2), cap: .seconds(3), probeLease: .seconds(60), streak: 5)

    public init(base: Duration, cap: Duration, probeLease: Duration, streak: Int) throws(QueueError) {
        guard base >= .milliseconds(1), cap >= base, probeLease >= .milliseconds(1), streak >= 1 else {
            throw .invalidArgument("a pause policy needs base ≥ 1 ms, cap ≥ base, a probe lease ≥ 1 ms and a streak ≥ 1")
        }
        self.init(checkedBase: base, cap: cap, probeLease: probeLease, streak: streak)
    }

    private init(checkedBase base: Duration, cap: Duration, probeLease: Duration, streak: Int) {
        self.base = base
        self.cap = cap
        self.probeLease = probeLease
        self.streak = streak
    }
}

/// What a worker may do before calling Apple.
public enum Admission: Sendable, Hashable {
    /// Call Apple once per time slot (1...wanted of them), each no sooner than its delay from when
    /// the admission arrived. Sending at the slot, not before, is what keeps the fleet's calls
    /// within the limit in every second as Apple counts them. (Placed by a `RedisClock`, the delays
    /// allow for a reply read late: one is negative when its slot had passed by the reading.)
    case granted(slots: [Duration])
    /// The fleet's slots are booked beyond the horizon asked for: ask again after this long.
    case wait(Duration)
    /// The fleet is paused because Apple is unavailable: postpone the job (no attempt charged)
    /// and ask again after this long.
    case paused(Duration)
    /// The pause is over and this worker is the one to find out whether Apple is back: make one
    /// call, then report `reportRecovered()` or `reportUnavailable()`.
    case probe
    /// This budget's endpoint told the fleet to come back later (HTTP 429): postpone the job (no
    /// attempt charged) and ask again after this long. Other budgets go on.
    case throttled(Duration)
    /// An operator or a configuration error stopped the fleet: postpone the job, raise the alarm.
    case halted(reason: String)
    /// A configuration error stopped the caller's app alone (its shared secret is wrong): postpone
    /// the job; the fleet's other apps go on.
    case appHalted(reason: String)
}

/// What a caller's last call to Apple got, told with its next admission: an answer ends the
/// fleet's streaks of unavailable ones and of recurring failures, and an answer about the receipt
/// (not a configuration error) ends the streak of configuration errors too.
public enum LastAnswer: Int, Sendable, Hashable {
    /// No answer (Apple unavailable), or no call yet.
    case none = 0
    /// Apple answered with a configuration error (21004, 21000).
    case configurationError = 1
    /// Apple answered about the receipt.
    case verdict = 2
}

/// What became of a failure reported with `FleetGate.reportRecurringFailure`.
public enum RecurringFailureVerdict: Sendable, Hashable {
    /// Counted toward the pause: the time until the pause ends, zero when the fleet does not pause.
    case counted(pause: Duration)
    /// Every call has failed so for the configured time: this report halted the fleet, for this reason.
    case halted(reason: String)
}

/// One of Apple's rate limits. Apple limits each endpoint on its own: verifyReceipt is the fleet's
/// first budget (`FleetGate.limit`, under the keys it always had); each App Store Server API
/// endpoint has a budget of its own, in the `group` a halt can stop alone.
public struct GateBudget: Sendable, Hashable {
    public var name: String
    public var group: String
    public var limit: RateLimit

    public init(name: String, group: String, limit: RateLimit) {
        self.name = name
        self.group = group
        self.limit = limit
    }
}

/// Fleet-wide admission to Apple: halt, then pause, then the rate limit, in one round trip.
///
/// Like every handle here it blocks on its thread's own connection, so it is not `Sendable`.
public final class FleetGate: ClockedScriptRunner {
    public let limit: RateLimit
    public let pausePolicy: PausePolicy
    /// The clock its scripts read (time slots, pauses, the recurring failure's streak): `.redis`, or `.driven` in tests.
    public let clock: ScriptClock
    let keys: QueueKeys
    let connection: RedisConnection

    public init(
        connection: RedisConnection, keys: QueueKeys, limit: RateLimit, pausePolicy: PausePolicy = .standard,
        clock: ScriptClock = .redis
    ) {
        self.connection = connection
        self.keys = keys
        self.limit = limit
        self.pausePolicy = pausePolicy
        self.clock = clock
    }

    /// Decides, in one round trip, whether a worker may call Apple now.
    /// KEYS[1] halted, KEYS[2] paused, KEYS[3] probe, KEYS[4] limiter state, KEYS[5] granted counter,
    /// KEYS[6] unavailable streak, KEYS[7] configuration streak, KEYS[8] recurring failure, KEYS[9]
    /// admission counter, KEYS[10] the budget's group halt, KEYS[11] the budget's throttle (set while
    /// Apple's 429 lasts); for the fleet's first budget, which has neither, both are KEYS[1];
    /// KEYS[12] the caller's app's halt (KEYS[1] when no app is named); KEYS[7] is the streak of the
    /// app the last answer was about, or the fleet's. ARGV[1] interval µs, ARGV[2] burst, ARGV[3] wanted, ARGV[4] probe lease ms,
    /// ARGV[5] the caller's last answer (`LastAnswer`): 1 or 2 when Apple answered (the unavailable
    /// and recurring-failure streaks end), 2 when about the receipt (the configuration streak ends
    /// too), ARGV[6] how far ahead slots may be booked, µs.
    /// Returns {'halted', reason} | {'app-halted', reason} | {'paused', ms to wait} | {'probe', 1} |
    /// {'throttled', ms to wait} | {'granted', {µs until each slot}, now in µs} | {'wait', µs until a slot is within reach}.
    /// Once a pause has run out, exactly one caller per lease gets the probe; the rest wait for its verdict.
    private static let admitScript = ClockedScript(ScriptPrologue.reserve + """
        redis.call('INCR', KEYS[9])
        -- The halts and the pause in one read: every admission asks, so each command counts.
        local halted, groupHalted, appHalted, paused = unpack(redis.call('MGET', KEYS[1], KEYS[10], KEYS[12], KEYS[2]))
        local reason = halted or groupHalted
        if reason then return {'halted', reason} end
        if appHalted then return {'app-halted', appHalted} end
        local pausedUntil = tonumber(paused)
        if pausedUntil then
            if now < pausedUntil then return {'paused', pausedUntil - now} end
            if redis.call('SET', KEYS[3], nowText, 'NX', 'PX', ARGV[4]) then
                redis.call('INCRBY', KEYS[5], 1)
                return {'probe', 1}
            end
            -- A probe is out: its verdict comes within one call, so look again within a second
            -- (not when its lease ends, which would keep the fleet idle long after Apple is back).
            return {'paused', math.min(math.max(redis.call('PTTL', KEYS[3]), 1), 1000)}
        end
        if ARGV[5] == '1' then redis.call('DEL', KEYS[6], KEYS[8]) end
        if ARGV[5] == '2' then redis.call('DEL', KEYS[6], KEYS[8], KEYS[7]) end
        if KEYS[11] ~= KEYS[1] then
            local throttled = redis.call('PTTL', KEYS[11])
            if throttled > 0 then return {'throttled', throttled} end
        end
        local slots, wait = reserve(KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
                                    tonumber(ARGV[6]))
        if #slots > 0 then return {'granted', slots, nowus} end
        return {'wait', wait}
        """)

    /// Asks to call Apple up to `wanted` times, at slots no further ahead than `horizon` (zero: now
    /// or not at all), for a receipt of `app` (nil: any app's), against `budget` (nil: the fleet's
    /// first), telling what this caller's last call got: when it was an answer about a receipt of
    /// `lastApp`, that app's streak of configuration errors ends (nil: the fleet's streak). With a
    /// `redisClock`, the slots count from when the reply would have been read promptly, so a reply
    /// read late does not place them late (on Redis's clock only: a driven one stands still).
    public func admit(
        upTo wanted: Int = 1, within horizon: Duration = .zero, after lastAnswer: LastAnswer = .none, lastApp: String? = nil,
        budget: GateBudget? = nil, app: String? = nil, placingSlotsBy redisClock: RedisClock? = nil
    ) throws(QueueError) -> Admission {
        guard wanted >= 1 else { throw .invalidArgument("admit at least 1 call, not \(wanted)") }
        let limit = budget?.limit ?? limit
        let asked = ContinuousClock.now
        let reply = try evaluate(
            Self.admitScript,
            keys: [keys.halted, keys.paused, keys.probe, budget.map { keys.limiter($0.name) } ?? keys.limiter,
                   budget.map { keys.limiterGranted($0.name) } ?? keys.limiterGranted, keys.unavailableStreak,
                   lastApp.map { keys.configurationStreak(app: $0) } ?? keys.configurationStreak, keys.recurringFailure,
                   keys.gateAdmissions, budget.map { keys.halted($0.group) } ?? keys.halted,
                   budget.map { keys.throttled($0.name) } ?? keys.halted, app.map { keys.halted(app: $0) } ?? keys.halted],
            arguments: [limit.intervalMicroseconds, limit.burst, wanted, pausePolicy.probeLease.wholeMilliseconds,
                        lastAnswer.rawValue, max(horizon.wholeMicroseconds, 0)])
        let read = ContinuousClock.now
        // Built only when thrown: describing the reply on every admission cost 6% of a worker's instructions.
        var unexpected: QueueError { .unexpectedReply(operation: "admit", reply: "\(reply)") }
        guard let parts = reply.array, parts.count >= 2, let verdict = parts[0].string else { throw unexpected }
        switch (verdict, parts[1].int) {
        case ("halted", _): return .halted(reason: parts[1].string ?? "")
        case ("app-halted", _): return .appHalted(reason: parts[1].string ?? "")
        case ("paused", let ms?): return .paused(.milliseconds(ms))
        case ("probe", _): return .probe
        case ("granted", _):
            guard let slots = parts[1].array?.compactMap(\.int), !slots.isEmpty, parts.count == 3, let stamp = parts[2].int else {
                throw unexpected
            }
            var late = Duration.zero
            if let redisClock, clock == .redis {
                late = redisClock.promptReading(ofReplyAt: stamp, asked: asked, read: read).duration(to: read)
            }
            return .granted(slots: slots.map { .microseconds($0) - late })
        case ("wait", let µs?): return .wait(.microseconds(µs))
        case ("throttled", let ms?): return .throttled(.milliseconds(ms))
        default: throw unexpected
        }
    }

    /// Counts an unavailable answer (see `ScriptPrologue.countUnavailable`); being another failure
    /// than a recurring one, it ends the streak of those.
    /// KEYS[1] paused, KEYS[2] failures, KEYS[3] probe, KEYS[4] unavailable streak, KEYS[5] recurring failure.
    /// ARGV[1] base ms, ARGV[2] cap ms, ARGV[3] streak. Returns the ms until the pause ends (0: no pause).
    private static let reportUnavailableScript = ClockedScript(ScriptPrologue.countUnavailable + """
        redis.call('DEL', KEYS[5])
        return countUnavailable(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
        """)

    /// Reports that Apple failed as unavailable (5xx, 21005, timeouts). Once `streak` such
    /// answers came in a row, starts a fleet-wide pause, longer after each consecutive one,
    /// unless a pause is already running. Returns the time until the pause ends: zero when the
    /// fleet does not pause (the caller retries its job alone).
    @discardableResult
    public func reportUnavailable() throws(QueueError) -> Duration {
        let reply = try evaluate(
            Self.reportUnavailableScript,
            keys: [keys.paused, keys.pauseFailures, keys.probe, keys.unavailableStreak, keys.recurringFailure],
            arguments: [pausePolicy.base.wholeMilliseconds, pausePolicy.cap.wholeMilliseconds, pausePolicy.streak])
        guard let ms = reply.int else { throw .unexpectedReply(operation: "reportUnavailable", reply: "\(reply)") }
        return .milliseconds(ms)
    }

    /// Counts a failure that usually passes but is a misconfiguration when it never stops (see
    /// `ScriptPrologue.countUnavailable`). The first one starts the streak; one that comes `halt after`
    /// ms or more later, with every call failing so in between, halts the fleet instead. The streak
    /// forgets itself after `halt after` ms without such a failure, so two lone ones a night apart
    /// never halt.
    /// KEYS[1] paused, KEYS[2] failures, KEYS[3] probe, KEYS[4] unavailable streak, KEYS[5] recurring
    /// failure, KEYS[6] halted, KEYS[7] halted since. ARGV[1] base ms, ARGV[2] cap ms, ARGV[3] streak, ARGV[4] halt after ms,
    /// ARGV[5] halt reason. Returns -1 when this call halted the fleet, else the ms until the pause ends.
    private static let reportRecurringFailureScript = ClockedScript(ScriptPrologue.countUnavailable + ScriptPrologue.halt + """
        local since = tonumber(redis.call('GET', KEYS[5])) or now
        if now - since >= tonumber(ARGV[4]) then
            halt(KEYS[6], KEYS[7], ARGV[5])
            redis.call('DEL', KEYS[5])
            return -1
        end
        redis.call('SET', KEYS[5], string.format('%d', since), 'PX', ARGV[4])
        return countUnavailable(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
        """)

    /// Reports a failure that usually passes but is a misconfiguration when it never stops (a
    /// broken TLS handshake: https to a plain HTTP port). It counts toward the pause like
    /// `reportUnavailable`; once every call has failed so for `haltAfter` (any other outcome in
    /// between, reported with an admission or `reportUnavailable`, starts over), it halts the fleet
    /// with `reason` instead: sanitized text only, cut to 500 characters.
    public func reportRecurringFailure(reason: String, haltAfter: Duration) throws(QueueError) -> RecurringFailureVerdict {
        let reply = try evaluate(
            Self.reportRecurringFailureScript,
            keys: [keys.paused, keys.pauseFailures, keys.probe, keys.unavailableStreak, keys.recurringFailure, keys.halted,
                   keys.since(keys.halted)],
            arguments: [pausePolicy.base.wholeMilliseconds, pausePolicy.cap.wholeMilliseconds, pausePolicy.streak,
                        max(haltAfter.wholeMilliseconds, 1), String(reason.prefix(500))])
        guard let ms = reply.int else { throw .unexpectedReply(operation: "reportRecurringFailure", reply: "\(reply)") }
        return ms < 0 ? .halted(reason: String(reason.prefix(500))) : .counted(pause: .milliseconds(ms))
    }

    /// Counts one subscription's configuration error (21004, 21000); once `needed` different
    /// subscriptions answered so in a row (an answer about a receipt in between, told to `admit`,
    /// starts over), halts the fleet (or the group, or the app, whose halt and streak the keys are).
    /// KEYS[1] halted, KEYS[2] configuration streak, KEYS[3] halted since. ARGV[1]
    /// subscription id, ARGV[2] needed, ARGV[3] halt reason, ARGV[4] streak lifetime in ms.
    /// Returns 1 when this call halted the fleet (or it was halted), else 0.
    private static let reportConfigurationErrorScript = ClockedScript(ScriptPrologue.halt + """
        if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
        redis.call('SADD', KEYS[2], ARGV[1])
        redis.call('PEXPIRE', KEYS[2], ARGV[4])
        if redis.call('SCARD', KEYS[2]) < tonumber(ARGV[2]) then return 0 end
        halt(KEYS[1], KEYS[3], ARGV[3])
        redis.call('DEL', KEYS[2])
        return 1
        """)

    /// Reports that Apple answered `subscriptionID`'s receipt with a configuration error. One such
    /// answer can be one app's receipt among another's, so the fleet (or only `group`, or only
    /// `app`) halts (with `reason`) once `needed` different subscriptions answered so in a row (of
    /// `app`: each app has a streak of its own); returns whether it did. The streak forgets itself
    /// after 10 minutes without another.
    public func reportConfigurationError(
        subscriptionID: Int64, reason: String, needed: Int, group: String? = nil, app: String? = nil
    ) throws(QueueError) -> Bool {
        let halted = app.map { keys.halted(app: $0) } ?? group.map { keys.halted($0) } ?? keys.halted
        let reply = try evaluate(
            Self.reportConfigurationErrorScript,
            keys: [halted, app.map { keys.configurationStreak(app: $0) } ?? keys.configurationStreak, keys.since(halted)],
            arguments: [subscriptionID, max(needed, 1), String(reason.prefix(500)), 600_000])
        guard let halted = reply.int else { throw .unexpectedReply(operation: "reportConfigurationError", reply: "\(reply)") }
        return halted == 1
    }

    /// Marks a budget spent until Apple's Retry-After: the later of its mark and this one.
    /// KEYS[1] the budget's throttle. ARGV[1] ms. Returns the ms it is now spent.
    private static let reportThrottledScript = RedisScript("""
        redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX')
        redis.call('PEXPIRE', KEYS[1], ARGV[1], 'GT')
        return redis.call('PTTL', KEYS[1])
        """)

    /// Reports that `budget`'s endpoint answered 429: nobody calls it for `wait` (the longest such
    /// report wins), while other budgets go on. Returns how long it is now spent.
    public func reportThrottled(_ budget: GateBudget, for wait: Duration) throws(QueueError) -> Duration {
        let reply = try connection.evaluate(
            Self.reportThrottledScript, keys: [keys.throttled(budget.name)], arguments: [max(wait.wholeMilliseconds, 1)])
        guard let ms = reply.int else { throw .unexpectedReply(operation: "reportThrottled", reply: "\(reply)") }
        return .milliseconds(max(ms, 0))
    }

    /// Reports that a probe succeeded: the pause ends for the whole fleet.
    public func reportRecovered() throws(QueueError) {
        try connection.execute(["DEL", keys.paused, keys.pauseFailures, keys.probe, keys.unavailableStreak, keys.recurringFailure])
    }

    /// Stops the whole fleet (or only `group`'s budgets) until `resume()`. `reason` is shown to
    /// operators: sanitized text only (no receipt, secret or password); cut to 500 characters.
    public func halt(reason: String, group: String? = nil) throws(QueueError) {
        let halted = group.map { keys.halted($0) } ?? keys.halted
        _ = try evaluate(Self.haltScript, keys: [halted, keys.since(halted)], arguments: [String(reason.prefix(500))])
    }

    /// KEYS[1] halted, KEYS[2] halted since. ARGV[1] reason. Returns 1.
    private static let haltScript = ClockedScript(ScriptPrologue.halt + """
        halt(KEYS[1], KEYS[2], ARGV[1])
        return 1
        """)

    /// Lifts a halt and any pause, the halts and throttles of `budgets`, and the halts of `apps`.
    public func resume(budgets: [GateBudget] = [], apps: [String] = []) throws(QueueError) {
        try connection.execute([
            "DEL", keys.halted, keys.paused, keys.pauseFailures, keys.probe, keys.unavailableStreak, keys.configurationStreak,
            keys.recurringFailure, keys.since(keys.halted),
        ] + budgets.flatMap { [keys.halted($0.group), keys.since(keys.halted($0.group)), keys.throttled($0.name)] }
          + apps.flatMap { [keys.halted(app: $0), keys.since(keys.halted(app: $0)), keys.configurationStreak(app: $0)] })
    }

    /// Lifts `app`'s halt alone; the rest of the fleet stays as it is.
    public func resume(app: String) throws(QueueError) {
        try connection.execute(["DEL", keys.halted(app: app), keys.since(keys.halted(app: app)), keys.configurationStreak(app: app)])
    }

    /// Why the whole fleet is halted; nil when it is not.
    public func haltedReason() throws(QueueError) -> String? {
        try connection.execute(["GET", keys.halted]).string
    }

    /// Why `app` is halted; nil when it is not.
    public func haltedReason(app: String) throws(QueueError) -> String? {
        try connection.execute(["GET", keys.halted(app: app)]).string
    }
}
