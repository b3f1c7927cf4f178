import RedisClient

/// A worker process that gave up rate-limit slots because it woke too late for them: its threads
/// do not get the CPU when their slots come (a noisy neighbour, a throttled container, too many
/// threads for its cores).
public struct StarvedWorker: Sendable, Hashable, Encodable {
    /// The process (`JobQueue.processName`).
    public var process: String
    /// Slots it gave up since it started.
    public var slotsGivenUp: Int64
    /// How long ago it last gave one up, in whole seconds.
    public var lastGivenUpSecondsAgo: Int64
}

extension JobQueue {
    /// Adds a process's newly given-up slots, and forgets processes that gave up none for long.
    /// KEYS[1] starved workers set, KEYS[2] given-up counts. ARGV[1] process, ARGV[2] slots,
    /// ARGV[3] forget after ms. Returns 1.
    private static let reportSlotsGivenUpScript = ClockedScript(ScriptPrologue.noteProcess + """
        noteProcess(KEYS[1], KEYS[2], ARGV[1], ARGV[3])
        redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[2])
        return 1
        """)

    /// Tells the fleet that `process` gave up `slots` more slots (the heartbeat does, for its
    /// process). Processes that give up none for an hour are forgotten.
    public func reportSlotsGivenUp(_ slots: Int, by process: String) throws(QueueError) {
        try evaluate(
            Self.reportSlotsGivenUpScript, keys: [keys.starvedWorkers, keys.slotsGivenUp],
            arguments: [process, slots, 3_600_000])
    }

    /// The processes that gave up a slot within the window.
    /// KEYS[1] starved workers set, KEYS[2] given-up counts. ARGV[1] window ms.
    /// Returns {process, slots, ms since the last, …}.
    private static let starvedWorkersScript = ClockedScript("""
        local reply = {}
        local recent = redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[1]), '+inf', 'WITHSCORES')
        for i = 1, #recent, 2 do
            local slots = tonumber(redis.call('HGET', KEYS[2], recent[i]) or '0')
            reply[#reply + 1] = {recent[i], slots, now - tonumber(recent[i + 1])}
        end
        return reply
        """)

    /// The worker processes that gave up a slot within `window`, the most starved first.
    public func starvedWorkers(within window: Duration = .seconds(300)) throws(QueueError) -> [StarvedWorker] {
        let reply = try evaluate(Self.starvedWorkersScript, keys: [keys.starvedWorkers, keys.slotsGivenUp],
                                 arguments: [window.wholeMilliseconds])
        guard let rows = reply.array else { throw .unexpectedReply(operation: "starved workers", reply: "\(reply)") }
        return try rows.map { (row: RedisValue) throws(QueueError) -> StarvedWorker in
            guard let parts = row.array, parts.count == 3, let process = parts[0].string, let slots = parts[1].int,
                let ago = parts[2].int
            else { throw .unexpectedReply(operation: "starved workers", reply: "\(reply)") }
            return StarvedWorker(process: process, slotsGivenUp: slots, lastGivenUpSecondsAgo: ago / 1000)
        }.sorted { $0.slotsGivenUp > $1.slotsGivenUp }
    }
}
