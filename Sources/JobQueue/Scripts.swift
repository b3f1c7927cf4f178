import RedisClient

/// Every Lua script the queue runs, in one place. Each names its KEYS and ARGV and what it returns.
///
/// Scripts make multi-step moves atomic: a job is always in exactly one of the ready streams
/// (perhaps reserved), the delayed set or the dead-letter stream, never in two and never in none;
/// and a subscription's bit in the queued bitmap is set exactly while a deduplicated job of it (see
/// `Job.Reason.isDeduplicated`) is in a ready stream or the delayed set.
/// Times come from Redis's own clock (`TIME`), never a worker's, so hosts with skewed clocks agree.
/// Every key a script touches is passed in KEYS and shares the deployment's hash tag, so the
/// scripts run unchanged on Redis Cluster.
///
/// Jobs are stored as their text form (see `Job`): `subscription|run|reason|attempt|enqueuedAt|firstFailedAt`.
/// Scripts build that text for fresh jobs and read the reason letter from it, nothing more.
enum Scripts {
    // MARK: Shared prologues

    /// Redis's clock: `now` in ms (also as `nowText`, digits only) and `nowus` in µs. Lua 5.1 numbers
    /// are doubles, exact for integers below 2^53, so µs since the epoch fit; `..` would print large
    /// numbers in exponent form, hence string.format.
    private static let clock = """
        local clock = redis.call('TIME')
        local nowus = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
        local now = math.floor(nowus / 1000)
        local nowText = string.format('%d', now)

        """

    /// `reservedBy(stream, group, id, consumer)`: whether the entry is reserved by that consumer.
    /// Checking the owner, not just the pending list, keeps a worker whose job was reclaimed by
    /// another from settling it twice (XACK alone accepts any consumer's ack).
    private static let ownership = """
        local function reservedBy(stream, group, id, consumer)
            return #redis.call('XPENDING', stream, group, id, id, 1, consumer) == 1
        end

        """

    /// `freshJob(subscription, run, reason)`: the text of a new job, enqueued now (needs `clock`).
    private static let freshJob = """
        local function freshJob(subscription, run, reason)
            return subscription .. '|' .. run .. '|' .. reason .. '|0|' .. nowText .. '|'
        end

        """

    /// `releaseQueued(bitmap, subscription)`: clears the subscription's queued bit when a job that
    /// holds it leaves the queue for good; `subscription` is "" for a job that holds none (its
    /// reason is not deduplicated, or it is not a job), which must leave a sweep's bit alone.
    private static let releaseQueued = """
        local function releaseQueued(bitmap, subscription)
            if subscription ~= '' then redis.call('SETBIT', bitmap, subscription, 0) end
        end

        """

    /// `asMap(flat)`: a table from XINFO's flat name/value list.
    private static let asMap = """
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
    private static let reserve = """
        local function reserve(state, counter, interval, burst, wanted, horizon)
            local tat = math.max(tonumber(redis.call('GET', state)) or nowus, nowus)
            local early = (burst - 1) * interval
            local slots = {}
            while #slots < wanted and tat - early <= nowus + horizon do
                slots[#slots + 1] = math.max(0, tat - early - nowus)
                tat = tat + interval
            end
            if #slots > 0 then
                redis.call('SET', state, string.format('%d', tat), 'PX', math.ceil((tat - nowus) / 1000) + 1)
                redis.call('INCRBY', counter, #slots)
            end
            return slots, math.max(0, tat - early - nowus - horizon)
        end

        """

    // MARK: Enqueueing and delivery

    /// Adds one job per subscription unless the subscription is already queued (its bit is set),
    /// and sets the bit of each one added; the job's ack or burial clears it again.
    /// KEYS[1] ready stream, KEYS[2] queued bitmap. ARGV[1] run id, ARGV[2] reason letter (a
    /// deduplicated reason), ARGV[3…] subscription ids. Returns the number added.
    static let enqueue = RedisScript(clock + freshJob + """
        local added = 0
        for i = 3, #ARGV do
            if redis.call('SETBIT', KEYS[2], ARGV[i], 1) == 0 then
                redis.call('XADD', KEYS[1], '*', 'j', freshJob(ARGV[i], ARGV[1], ARGV[2]))
                added = added + 1
            end
        end
        return added
        """)

    /// Adds one job now, whatever is queued: for a job that answers one event (a notification).
    /// Its reason is not deduplicated, so it neither reads nor sets the queued bitmap.
    /// KEYS[1] ready stream, KEYS[2] (optional) the occurrence's once-key. ARGV[1] subscription id,
    /// ARGV[2] run id, ARGV[3] reason letter, ARGV[4] the once-key's lifetime in seconds.
    /// Returns the job's text, or false when the once-key says the occurrence's job was enqueued.
    static let enqueueOne = RedisScript(clock + freshJob + """
        if KEYS[2] and not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[4]) then return false end
        local job = freshJob(ARGV[1], ARGV[2], ARGV[3])
        redis.call('XADD', KEYS[1], '*', 'j', job)
        return job
        """)

    /// Reserves up to `count` new entries without blocking, draining the streams in KEYS order
    /// (high priority first). KEYS ready streams. ARGV[1] group, ARGV[2] consumer, ARGV[3] count.
    /// Returns {stream, entry id, {field, value, …}} per entry.
    static let take = RedisScript("""
        local taken, wanted = {}, tonumber(ARGV[3])
        for _, stream in ipairs(KEYS) do
            if wanted == 0 then break end
            local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', wanted, 'STREAMS', stream, '>')
            if reply then
                for _, entry in ipairs(reply[1][2]) do
                    taken[#taken + 1] = {stream, entry[1], entry[2]}
                    wanted = wanted - 1
                end
            end
        end
        return taken
        """)

    /// Acknowledges finished jobs and deletes them, so the streams do not grow without bound; each
    /// job has left the queue, so its subscription's queued bit (if the job holds it) is cleared.
    /// KEYS[1] queued bitmap, KEYS[2…] the jobs' ready streams. ARGV[1] group, ARGV[2] consumer, then
    /// per job three: the index in KEYS of its stream, its entry id, the subscription id whose queued
    /// bit it holds ("" if none).
    /// Returns, per job, 1, or 0 if it is not (or no longer) reserved by this consumer.
    /// A batch costs a few commands, not four per job: one XPENDING per stream lists what this
    /// consumer holds (its own batch, a handful), then one XACK and one XDEL per stream and one
    /// BITFIELD for every queued bit (the same bits SETBIT numbers).
    static let ack = RedisScript("""
        local acked, owned, streams = {}, {}, {}
        for i = 3, #ARGV, 3 do
            local index = tonumber(ARGV[i])
            streams[index] = streams[index] or {}
            table.insert(streams[index], i)
        end
        for index, jobs in pairs(streams) do
            local stream, held, ids = KEYS[index], {}, {}
            for _, entry in ipairs(redis.call('XPENDING', stream, ARGV[1], '-', '+', 100000, ARGV[2])) do
                held[entry[1]] = true
            end
            for _, i in ipairs(jobs) do
                if held[ARGV[i + 1]] then
                    owned[i] = true
                    ids[#ids + 1] = ARGV[i + 1]
                end
            end
            if #ids > 0 then
                redis.call('XACK', stream, ARGV[1], unpack(ids))
                redis.call('XDEL', stream, unpack(ids))
            end
        end
        local bits = {}
        for i = 3, #ARGV, 3 do
            if owned[i] and ARGV[i + 2] ~= '' then
                bits[#bits + 1] = 'SET'; bits[#bits + 1] = 'u1'; bits[#bits + 1] = ARGV[i + 2]; bits[#bits + 1] = 0
            end
            acked[#acked + 1] = owned[i] and 1 or 0
        end
        if #bits > 0 then redis.call('BITFIELD', KEYS[1], unpack(bits)) end
        return acked
        """)

    /// Moves a reserved job to the delayed set, due `delay` ms from now. It is still queued, so
    /// its subscription's queued bit stays set.
    /// KEYS[1] its ready stream, KEYS[2] delayed set. ARGV[1] group, ARGV[2] consumer, ARGV[3] entry id,
    /// ARGV[4] delay in ms, ARGV[5] the job as it should run next, ARGV[6] "stamp" to record now as its
    /// first failure if it has none (its text ends in '|'), else "".
    /// Returns 1, or 0 if the job is not (or no longer) reserved by this consumer.
    static let delay = RedisScript(clock + ownership + """
        if not reservedBy(KEYS[1], ARGV[1], ARGV[3], ARGV[2]) then return 0 end
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
        redis.call('XDEL', KEYS[1], ARGV[3])
        local job = ARGV[5]
        if ARGV[6] == 'stamp' and string.sub(job, -1) == '|' then job = job .. nowText end
        redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), job)
        return 1
        """)

    /// Moves a reserved entry to the dead-letter stream. A dead letter is not queued: the
    /// subscription's queued bit (if the job holds it) is cleared, so the next pass may enqueue it.
    /// KEYS[1] its ready stream, KEYS[2] dead stream, KEYS[3] queued bitmap. ARGV[1] group, ARGV[2]
    /// consumer, ARGV[3] entry id, ARGV[4] job text, ARGV[5] error class, ARGV[6] message, ARGV[7]
    /// attempts, ARGV[8] first failure in ms ("" for now), ARGV[9] the subscription id whose queued
    /// bit the job holds, or "". Returns 1, or 0 if the entry is not (or no longer) reserved by this consumer.
    static let bury = RedisScript(clock + ownership + releaseQueued + """
        if not reservedBy(KEYS[1], ARGV[1], ARGV[3], ARGV[2]) then return 0 end
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
        redis.call('XDEL', KEYS[1], ARGV[3])
        releaseQueued(KEYS[3], ARGV[9])
        local firstFailure = ARGV[8] ~= '' and ARGV[8] or nowText
        redis.call('XADD', KEYS[2], '*', 'job', ARGV[4], 'error', ARGV[5], 'message', ARGV[6],
            'attempts', ARGV[7], 'first_failure', firstFailure, 'last_failure', nowText, 'buried_at', nowText)
        return 1
        """)

    // MARK: Maintenance

    /// Moves due delayed jobs to their ready stream, earliest due first.
    /// KEYS[1] delayed set, KEYS[2] ready stream, KEYS[3] high-priority ready stream.
    /// ARGV[1] batch size, ARGV[2…] the reason letters that go to the high-priority stream.
    /// Returns the number of jobs moved. Undecodable members go to KEYS[2]; reserve buries them.
    static let promote = RedisScript(clock + """
        local high = {}
        for i = 2, #ARGV do high[ARGV[i]] = true end
        local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
        for _, job in ipairs(due) do
            local reason = string.match(job, '^[^|]*|[^|]*|([^|]*)|')
            redis.call('XADD', (reason and high[reason]) and KEYS[3] or KEYS[2], '*', 'j', job)
            redis.call('ZREM', KEYS[1], job)
        end
        return #due
        """)

    /// Claims for this consumer entries reserved longer than `min idle` ms ago (their worker
    /// probably died), one XAUTOCLAIM step. KEYS[1] ready stream. ARGV[1] group, ARGV[2] consumer,
    /// ARGV[3] min idle ms, ARGV[4] cursor, ARGV[5] count.
    /// Returns {next cursor, {{entry id, {field, value, …}, delivery count}, …}, deleted entries
    /// (Redis 7 drops from the pending list entries that were deleted from the stream)}.
    static let reclaim = RedisScript("""
        local reply = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
        local claimed = {}
        for _, entry in ipairs(reply[2]) do
            local pending = redis.call('XPENDING', KEYS[1], ARGV[1], entry[1], entry[1], 1)
            claimed[#claimed + 1] = {entry[1], entry[2], pending[1][4]}
        end
        return {reply[1], claimed, #(reply[3] or {})}
        """)

    /// Renews the leases of entries their consumers still hold: resets each one's idle time, so
    /// `reclaim` leaves it alone, without counting a delivery (XCLAIM … JUSTID). An entry settled
    /// meanwhile (acked, delayed, buried) or reclaimed by another consumer is skipped: XCLAIM on
    /// its own would take a reclaimed entry back from its new holder.
    /// KEYS ready streams. ARGV[1] group, ARGV[2…] triples of stream (its index in KEYS, from 1),
    /// consumer, entry id. Returns the number of leases renewed.
    static let renewLeases = RedisScript(ownership + """
        local renewed = 0
        for i = 2, #ARGV, 3 do
            local stream, consumer, id = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
            if reservedBy(stream, ARGV[1], id, consumer) then
                redis.call('XCLAIM', stream, ARGV[1], consumer, 0, id, 'JUSTID')
                renewed = renewed + 1
            end
        end
        return renewed
        """)

    /// Records that a consumer is alive and forgets consumers silent for too long.
    /// KEYS[1] workers set. ARGV[1] consumer, ARGV[2] forget after ms. Returns 1.
    static let heartbeat = RedisScript(clock + """
        redis.call('ZADD', KEYS[1], now, ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
        return 1
        """)

    /// Removes a consumer from the group, unless it still has reserved entries.
    /// KEYS[1] workers set, KEYS[2…] ready streams. ARGV[1] group, ARGV[2] consumer.
    /// Returns 1 if removed, 0 if it still holds entries (settle or let them be reclaimed first).
    static let deregister = RedisScript("""
        for i = 2, #KEYS do
            local pending = redis.pcall('XPENDING', KEYS[i], ARGV[1], '-', '+', 1, ARGV[2])
            if pending.err == nil and #pending > 0 then return 0 end
        end
        for i = 2, #KEYS do redis.pcall('XGROUP', 'DELCONSUMER', KEYS[i], ARGV[1], ARGV[2]) end
        redis.call('ZREM', KEYS[1], ARGV[2])
        return 1
        """)

    /// Removes consumers that hold no entries and were idle longer than a limit (left by
    /// processes that exited without deregistering). KEYS ready streams. ARGV[1] group,
    /// ARGV[2] idle ms. Returns the number of (stream, consumer) pairs removed.
    static let removeIdleConsumers = RedisScript(asMap + """
        local removed = 0
        for _, stream in ipairs(KEYS) do
            local consumers = redis.pcall('XINFO', 'CONSUMERS', stream, ARGV[1])
            if consumers.err == nil then
                for _, flat in ipairs(consumers) do
                    local consumer = asMap(flat)
                    if consumer.pending == 0 and consumer.idle > tonumber(ARGV[2]) then
                        redis.call('XGROUP', 'DELCONSUMER', stream, ARGV[1], consumer.name)
                        removed = removed + 1
                    end
                end
            end
        end
        return removed
        """)

    // MARK: Dead letters

    /// Re-enqueues dead letters as fresh jobs (attempt 0), each only if it is still in the
    /// dead-letter stream (so concurrent replays cannot duplicate it). Replay is a deduplicated
    /// reason: a letter whose subscription is already queued again (a later pass enqueued it)
    /// leaves the dead letters without a second job, since the queued one does the same work.
    /// KEYS[1] dead stream, KEYS[2] ready stream, KEYS[3] queued bitmap. ARGV[1] reason letter,
    /// ARGV[2…] triples of dead-letter id, subscription id, run id. Returns the number of letters replayed.
    static let replay = RedisScript(clock + freshJob + """
        local replayed = 0
        for i = 2, #ARGV, 3 do
            if redis.call('XDEL', KEYS[1], ARGV[i]) == 1 then
                if redis.call('SETBIT', KEYS[3], ARGV[i + 1], 1) == 0 then
                    redis.call('XADD', KEYS[2], '*', 'j', freshJob(ARGV[i + 1], ARGV[i + 2], ARGV[1]))
                end
                replayed = replayed + 1
            end
        end
        return replayed
        """)

    // MARK: Rate limit, pause and halt

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
    /// {'throttled', ms to wait} | {'granted', {µs until each slot}} | {'wait', µs until a slot is within reach}.
    /// Once a pause has run out, exactly one caller per lease gets the probe; the rest wait for its verdict.
    static let admit = RedisScript(clock + reserve + """
        redis.call('INCR', KEYS[9])
        local reason = redis.call('GET', KEYS[1])
        if not reason and KEYS[10] ~= KEYS[1] then reason = redis.call('GET', KEYS[10]) end
        if reason then return {'halted', reason} end
        if KEYS[12] ~= KEYS[1] then
            local appReason = redis.call('GET', KEYS[12])
            if appReason then return {'app-halted', appReason} end
        end
        local pausedUntil = tonumber(redis.call('GET', KEYS[2]))
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
        if ARGV[5] ~= '0' then redis.call('DEL', KEYS[6], KEYS[8]) end
        if ARGV[5] == '2' then redis.call('DEL', KEYS[7]) end
        if KEYS[11] ~= KEYS[1] then
            local throttled = redis.call('PTTL', KEYS[11])
            if throttled > 0 then return {'throttled', throttled} end
        end
        local slots, wait = reserve(KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
                                    tonumber(ARGV[6]))
        if #slots > 0 then return {'granted', slots} end
        return {'wait', wait}
        """)

    /// Marks a budget spent until Apple's Retry-After: the later of its mark and this one.
    /// KEYS[1] the budget's throttle. ARGV[1] ms. Returns the ms it is now spent.
    static let reportThrottled = RedisScript("""
        redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX')
        redis.call('PEXPIRE', KEYS[1], ARGV[1], 'GT')
        return redis.call('PTTL', KEYS[1])
        """)

    /// Admits one request of one API client (a token's name, or a caller's address), fleet-wide:
    /// every `serve` replica charges the same bucket. KEYS[1] the client's limiter state, KEYS[2]
    /// admitted counter. ARGV[1] interval µs, ARGV[2] burst.
    /// Returns µs to wait, 0 when admitted.
    static let admitClient = RedisScript(clock + reserve + """
        local slots, wait = reserve(KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]), 1, 0)
        if #slots > 0 then return 0 end
        return math.max(1, wait)
        """)

    /// Counts one subscription's configuration error (21004, 21000); once `needed` different
    /// subscriptions answered so in a row (an answer about a receipt in between, told to `admit`,
    /// starts over), halts the fleet (or the group, or the app, whose halt and streak the keys are).
    /// KEYS[1] halted, KEYS[2] configuration streak. ARGV[1]
    /// subscription id, ARGV[2] needed, ARGV[3] halt reason, ARGV[4] streak lifetime in ms.
    /// Returns 1 when this call halted the fleet (or it was halted), else 0.
    static let reportConfigurationError = RedisScript("""
        if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
        redis.call('SADD', KEYS[2], ARGV[1])
        redis.call('PEXPIRE', KEYS[2], ARGV[4])
        if redis.call('SCARD', KEYS[2]) < tonumber(ARGV[2]) then return 0 end
        redis.call('SET', KEYS[1], ARGV[3])
        redis.call('DEL', KEYS[2])
        return 1
        """)

    /// `countUnavailable(paused, failures, probe, streak, base, cap, needed)` (needs `clock`): counts
    /// an unavailable answer; once `needed` came in a row (no answer from Apple between them, see
    /// `admit`), starts a fleet-wide pause, unless one is already running (failures of calls that
    /// were in flight when it began must not lengthen it). Each pause doubles the last, up to `cap`
    /// ms from `base` ms. Once a pause has run out, a failure (the probe's) starts the next at once:
    /// only a probe's success (`reportRecovered`) ends the cycle. Returns the ms until the pause
    /// ends (0: no pause).
    private static let countUnavailable = """
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

    /// Counts an unavailable answer (see `countUnavailable`); being another failure than a
    /// recurring one, it ends the streak of those.
    /// KEYS[1] paused, KEYS[2] failures, KEYS[3] probe, KEYS[4] unavailable streak, KEYS[5] recurring failure.
    /// ARGV[1] base ms, ARGV[2] cap ms, ARGV[3] streak. Returns the ms until the pause ends (0: no pause).
    static let reportUnavailable = RedisScript(clock + countUnavailable + """
        redis.call('DEL', KEYS[5])
        return countUnavailable(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
        """)

    /// Counts a failure that usually passes but is a misconfiguration when it never stops (see
    /// `countUnavailable`). The first one starts the streak; one that comes `halt after` ms or more
    /// later, with every call failing so in between, halts the fleet instead. The streak forgets
    /// itself after `halt after` ms without such a failure, so two lone ones a night apart never halt.
    /// KEYS[1] paused, KEYS[2] failures, KEYS[3] probe, KEYS[4] unavailable streak, KEYS[5] recurring
    /// failure, KEYS[6] halted. ARGV[1] base ms, ARGV[2] cap ms, ARGV[3] streak, ARGV[4] halt after ms,
    /// ARGV[5] halt reason. Returns -1 when this call halted the fleet, else the ms until the pause ends.
    static let reportRecurringFailure = RedisScript(clock + countUnavailable + """
        local since = tonumber(redis.call('GET', KEYS[5])) or now
        if now - since >= tonumber(ARGV[4]) then
            redis.call('SET', KEYS[6], ARGV[5])
            redis.call('DEL', KEYS[5])
            return -1
        end
        redis.call('SET', KEYS[5], string.format('%d', since), 'PX', ARGV[4])
        return countUnavailable(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
        """)

    // MARK: Stats

    /// Everything `QueueStats` shows, read at one instant.
    /// KEYS[1] high ready stream, KEYS[2] ready stream, KEYS[3] delayed, KEYS[4] dead, KEYS[5] workers,
    /// KEYS[6] paused, KEYS[7] halted, KEYS[8] granted counter. ARGV[1] group, ARGV[2] live window ms.
    /// Returns {lane, lane, due, later, dead, live workers, paused until | nil, halted reason | nil,
    /// granted | nil}; a lane is {length, reserved, age of oldest unreserved entry in ms (-1: none),
    /// {{consumer, reserved, idle ms}, …}}.
    static let stats = RedisScript(clock + asMap + """
        local function lane(stream)
            local length, reserved, lastDelivered, consumers = redis.call('XLEN', stream), 0, '0-0', {}
            local groups = redis.pcall('XINFO', 'GROUPS', stream)
            for _, flat in ipairs(groups.err == nil and groups or {}) do
                local group = asMap(flat)
                if group.name == ARGV[1] then
                    reserved, lastDelivered = group.pending, group['last-delivered-id']
                    for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, ARGV[1])) do
                        local consumer = asMap(c)
                        consumers[#consumers + 1] = {consumer.name, consumer.pending, consumer.idle}
                    end
                end
            end
            local oldest = redis.call('XRANGE', stream, '(' .. lastDelivered, '+', 'COUNT', 1)[1]
            local age = oldest and now - tonumber(string.match(oldest[1], '^%d+')) or -1
            return {length, reserved, age, consumers}
        end
        return {lane(KEYS[1]), lane(KEYS[2]),
            redis.call('ZCOUNT', KEYS[3], '-inf', now), redis.call('ZCOUNT', KEYS[3], '(' .. nowText, '+inf'),
            redis.call('XLEN', KEYS[4]), redis.call('ZCOUNT', KEYS[5], now - tonumber(ARGV[2]), '+inf'),
            redis.call('GET', KEYS[6]), redis.call('GET', KEYS[7]), redis.call('GET', KEYS[8])}
        """)

    // MARK: Locks

    /// Extends a lock's lifetime if the caller still holds it.
    /// KEYS[1] the lock. ARGV[1] the holder's token, ARGV[2] the new lifetime in ms.
    /// Returns 1 if extended, 0 if the lock is gone or someone else's.
    static let renewLock = RedisScript("""
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
        """)

    /// Releases a lock if the caller still holds it.
    /// KEYS[1] the lock. ARGV[1] the holder's token. Returns 1 if released, 0 otherwise.
    static let releaseLock = RedisScript("""
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        return redis.call('DEL', KEYS[1])
        """)
}
