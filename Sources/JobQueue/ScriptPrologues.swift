/// The Lua prologues the queue's scripts share: each defines a few locals or a function, and a
/// script's text is the prologues it needs followed by its own code.
///
/// Every script sits right above the method that runs it, with its KEYS, its ARGV and what it
/// returns. They follow the same rules:
/// - Times come from Redis's own clock (`TIME`, see `clock(_:)`), never a worker's, so hosts with
///   skewed clocks agree; tests may drive that clock instead (`ScriptClock`). A script that reads
///   the time is a `ClockedScript`.
/// - Every key a script touches is passed in KEYS and shares the deployment's hash tag, so the
///   scripts run unchanged on Redis Cluster.
/// - Jobs are stored as their text form (see `Job`): `subscription|run|reason|attempt|enqueuedAt|firstFailedAt`.
///   Scripts build that text for fresh jobs and read the reason letter from it, nothing more.
enum ScriptPrologue {
    /// The clock (see `ScriptClock`): `now` in ms (also as `nowText`, digits only) and `nowus` in µs.
    /// Lua 5.1 numbers are doubles, exact for integers below 2^53, so µs since the epoch fit; `..`
    /// would print large numbers in exponent form, hence string.format.
    ///
    /// On Redis's clock, `TIME`. The driven clock's key is the last of KEYS (`ClockedScript`): taken
    /// off KEYS, then read; when it is missing, Redis's time is stored in it and read. The shifted
    /// clock's key likewise: `TIME` plus the shift it holds.
    ///
    /// `keepMs`: what a script adds to the lifetime of state it times by `now` (the rate buckets').
    /// Redis expires keys on its own clock, which a driven clock does not hold back: a test machine
    /// stalled between two moves of the clock would lose the state, so on the driven clock it lives
    /// ten minutes longer.
    static func clock(_ clock: ScriptClock) -> String {
        switch clock {
        case .redis: """
            local clock = redis.call('TIME')
            local nowus = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
            local now = math.floor(nowus / 1000)
            local nowText = string.format('%d', now)
            local keepMs = 0

            """
        case .driven: """
            local drivenClock = table.remove(KEYS)
            local nowus = tonumber(redis.call('GET', drivenClock))
            if not nowus then
                local clock = redis.call('TIME')
                nowus = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
                redis.call('SET', drivenClock, string.format('%d', nowus))
            end
            local now = math.floor(nowus / 1000)
            local nowText = string.format('%d', now)
            local keepMs = 600000

            """
        case .shifted: """
            local timeShift = table.remove(KEYS)
            local clock = redis.call('TIME')
            local nowus = tonumber(clock[1]) * 1000000 + tonumber(clock[2]) + (tonumber(redis.call('GET', timeShift)) or 0)
            local now = math.floor(nowus / 1000)
            local nowText = string.format('%d', now)
            local keepMs = 0

            """
        }
    }

    /// `reservedBy(stream, group, id, consumer)`: whether the entry is reserved by that consumer.
    /// Checking the owner, not just the pending list, keeps a worker whose job was reclaimed by
    /// another from settling it twice (XACK alone accepts any consumer's ack).
    static let ownership = """
        local function reservedBy(stream, group, id, consumer)
            return #redis.call('XPENDING', stream, group, id, id, 1, consumer) == 1
        end

        """

    /// `freshJob(subscription, run, reason)`: the text of a new job, enqueued now (needs `clock`).
    static let freshJob = """
        local function freshJob(subscription, run, reason)
            return subscription .. '|' .. run .. '|' .. reason .. '|0|' .. nowText .. '|'
        end

        """

    /// `countQueued(counts, seconds, enqueuedAt, delta)`: counts `delta` jobs first enqueued at
    /// `enqueuedAt` (ms) into (or, negative, out of) their second in `QueueKeys.queuedPerSecond`
    /// (`counts`), and keeps that second in `QueueKeys.queuedSeconds` (`seconds`) while it holds a
    /// job: added with its first, dropped with its last. Every script that adds a job to the queue or
    /// lets one leave it for good calls it; moves between the ready streams and the delayed set keep a
    /// job's second. Only a second's first job and its last touch the sorted set.
    /// `enqueuedAtOf(job)`: the enqueue time in a job's text, or nil if the text is not a job.
    static let countQueued = """
        local function countQueued(counts, seconds, enqueuedAt, delta)
            local second = math.floor(tonumber(enqueuedAt) / 1000)
            local field = string.format('%d', second)
            local count = redis.call('HINCRBY', counts, field, delta)
            if count <= 0 then
                redis.call('HDEL', counts, field)
                redis.call('ZREM', seconds, field)
            elseif count == delta then
                redis.call('ZADD', seconds, second * 1000, field)
            end
        end
        local function enqueuedAtOf(job)
            return string.match(job, '^[^|]*|[^|]*|[^|]*|[^|]*|(%d+)|')
        end

        """

    /// `oldestQueuedAge(seconds)`: ms since the start of the oldest second in `QueueKeys.queuedSeconds`
    /// that has begun (a job scheduled for later counts once its time has come), or -1 when none has
    /// (needs `clock`): the oldest job's age to the second, in one O(log n) read.
    static let oldestQueued = """
        local function oldestQueuedAge(seconds)
            local oldest = redis.call('ZRANGE', seconds, '-inf', now, 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2]
            return oldest and now - tonumber(oldest) or -1
        end

        """

    /// `tallyRun(key, field, delta)`: adds to a run's tally (`QueueKeys.run`) if the run still has one,
    /// so a job outliving its run's tally does not bring back a tally that never expires; a job
    /// settled (`delta` > 0 to `verified` or `dead`) notes when, so the run's end is known (needs `clock`).
    static let tallyRun = """
        local function tallyRun(key, field, delta)
            if redis.call('EXISTS', key) == 0 then return end
            redis.call('HINCRBY', key, field, delta)
            if delta > 0 and field ~= 'replayed' then redis.call('HSET', key, 'last', nowText) end
        end

        """

    /// `halt(key, sinceKey, reason)`: halts (the fleet, a group or an app, whose halt `key` is) for
    /// `reason`, and notes when, unless it was halted already (needs `clock`).
    static let halt = """
        local function halt(key, sinceKey, reason)
            redis.call('SET', key, reason)
            redis.call('SET', sinceKey, nowText, 'NX')
        end

        """

    /// `releaseQueued(bitmap, subscription)`: clears the subscription's queued bit when a job that
    /// holds it leaves the queue for good; `subscription` is "" for a job that holds none (its
    /// reason is not deduplicated, or it is not a job), which must leave a sweep's bit alone.
    static let releaseQueued = """
        local function releaseQueued(bitmap, subscription)
            if subscription ~= '' then redis.call('SETBIT', bitmap, subscription, 0) end
        end

        """

    /// `noteProcess(set, reports, process, forgetAfter)`: scores `process` now in `set` (needs
    /// `clock`), and forgets the processes silent for `forgetAfter` ms there and in the hash `reports`.
    static let noteProcess = """
        local function noteProcess(set, reports, process, forgetAfter)
            redis.call('ZADD', set, now, process)
            local silentSince = now - tonumber(forgetAfter)
            for _, forgotten in ipairs(redis.call('ZRANGEBYSCORE', set, '-inf', silentSince)) do
                redis.call('HDEL', reports, forgotten)
            end
            redis.call('ZREMRANGEBYSCORE', set, '-inf', silentSince)
        end

        """

    /// `asMap(flat)`: a table from XINFO's flat name/value list.
    static let asMap = """
        local function asMap(flat)
            local map = {}
            for i = 1, #flat, 2 do map[flat[i]] = flat[i + 1] end
            return map
        end

        """

    /// `reserve(state, counter, interval, burst, wanted, horizon)` → slots, µs until the next slot is
    /// within the horizon (needs `clock`). The generic cell rate algorithm over integer µs, as virtual
    /// scheduling: `state` holds the theoretical arrival time (TAT) of the next token; a token's slot
    /// is TAT − (burst − 1)·interval, or now if that has passed, and each token moves TAT one interval
    /// on. So slots in any window of length W number at most burst + W/interval, fleet-wide, and
    /// callers who send at their slots, not before, keep the limit at the wire. Slots up to `horizon`
    /// µs ahead may be booked: a caller sleeps until its slot instead of asking again and again.
    /// Slots are returned as µs from now (0: at once).
    static let reserve = """
        local function reserve(state, counter, interval, burst, wanted, horizon)
            local tat = math.max(tonumber(redis.call('GET', state)) or nowus, nowus)
            local early = (burst - 1) * interval
            local slots = {}
            while #slots < wanted and tat - early <= nowus + horizon do
                slots[#slots + 1] = math.max(0, tat - early - nowus)
                tat = tat + interval
            end
            if #slots > 0 then
                redis.call('SET', state, string.format('%d', tat), 'PX', math.ceil((tat - nowus) / 1000) + 1 + keepMs)
                redis.call('INCRBY', counter, #slots)
            end
            return slots, math.max(0, tat - early - nowus - horizon)
        end

        """

    /// `countUnavailable(paused, failures, probe, streak, base, cap, needed)` (needs `clock`): counts
    /// an unavailable answer; once `needed` came in a row (no answer from Apple between them, see
    /// `FleetGate.admit`), starts a fleet-wide pause, unless one is already running (failures of calls
    /// that were in flight when it began must not lengthen it). Each pause doubles the last, up to
    /// `cap` ms from `base` ms. Once a pause has run out, a failure (the probe's) starts the next at
    /// once: only a probe's success (`FleetGate.reportRecovered`) ends the cycle. Returns the ms until
    /// the pause ends (0: no pause).
    static let countUnavailable = """
        local function countUnavailable(paused, failures, probe, streak, base, cap, needed)
            local pausedUntil = tonumber(redis.call('GET', paused))
            if pausedUntil and now < pausedUntil then return pausedUntil - now end
            if not pausedUntil and redis.call('INCR', streak) < needed then return 0 end
            local count = redis.call('INCR', failures)
            local pause = math.min(cap, base * 2 ^ math.min(count - 1, 40))
            redis.call('SET', paused, string.format('%d', now + pause))
            redis.call('DEL', probe)
            return pause
        end

        """
}
