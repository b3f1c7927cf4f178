import RedisClient

/// What `reclaim` did.
public struct Reclaimed: Sendable, Hashable {
    /// Jobs now reserved by this consumer: process and settle them like reserved ones.
    public var jobs: [ReservedJob] = []
    /// Entries delivered more than `maxDeliveries` times, moved to the dead letters as "stalled".
    public var buried = 0
    /// Pending entries whose stream entry no longer existed; Redis dropped them from the pending list.
    public var deleted = 0
}

extension JobQueue {
    /// Moves due delayed jobs to their ready stream, earliest due first.
    /// KEYS[1] delayed set, KEYS[2] ready stream, KEYS[3] high-priority ready stream.
    /// ARGV[1] batch size, ARGV[2…] the reason letters that go to the high-priority stream.
    /// Returns the number of jobs moved. Undecodable members go to KEYS[2]; reserve buries them.
    private static let promoteScript = ClockedScript("""
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

    /// Moves up to `batch` due jobs from the delayed set to their ready streams, earliest due
    /// first, atomically; safe to run in many processes at once. Returns how many moved: call
    /// again while it returns `batch`.
    @discardableResult
    public func promoteDue(batch: Int = 500) throws(QueueError) -> Int {
        guard (1...10_000).contains(batch) else { throw .invalidArgument("promote batch \(batch) is outside 1...10000") }
        let highReasons = Job.Reason.allCases.filter(\.isHighPriority).map(\.rawValue)
        let reply = try evaluate(
            Self.promoteScript, keys: [keys.delayed, keys.ready, keys.readyHigh], arguments: [batch] + highReasons)
        guard let moved = reply.int else { throw .unexpectedReply(operation: "promoteDue", reply: "\(reply)") }
        return Int(moved)
    }

    /// Makes the delayed jobs due within the window due now, a batch at a time.
    /// KEYS[1] delayed set. ARGV[1] the window in ms, ARGV[2] batch size.
    /// Returns how many it made due; none of them is due later any more, so a next call finds others.
    private static let bringForwardScript = ClockedScript("""
        local soon = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, now + tonumber(ARGV[1]), 'LIMIT', 0, tonumber(ARGV[2]))
        for _, job in ipairs(soon) do redis.call('ZADD', KEYS[1], 'XX', now, job) end
        return #soon
        """)

    /// Makes due now every delayed job due within `window`, which the promoter then moves to its
    /// stream: on `resume`, the jobs a halt postponed (each by its wait) go at once, not a wait later.
    /// Retries a moment from their time go with them; jobs due further off keep their time.
    /// Returns how many it made due.
    @discardableResult
    public func bringForward(dueWithin window: Duration) throws(QueueError) -> Int {
        let batch = 1_000
        var moved = 0
        while true {
            let reply = try evaluate(Self.bringForwardScript, keys: [keys.delayed], arguments: [window.wholeMilliseconds, batch])
            guard let count = reply.int else { throw .unexpectedReply(operation: "bringForward", reply: "\(reply)") }
            moved += Int(count)
            if count < batch { return moved }
        }
    }

    /// Claims for this consumer the jobs reserved more than `visibilityTimeout` ago and never
    /// settled (their worker probably died), following XAUTOCLAIM's cursor through both streams
    /// until it has looked at everything or claimed `limit` entries.
    ///
    /// An entry delivered more than `maxDeliveries` times is not handed out again but moved to
    /// the dead letters (error class "stalled"): a job that kills its worker must not kill the fleet.
    public func reclaim(
        idleLongerThan visibilityTimeout: Duration, maxDeliveries: Int, limit: Int = 100
    ) throws(QueueError) -> Reclaimed {
        guard maxDeliveries >= 1, limit >= 1 else {
            throw .invalidArgument("reclaim needs maxDeliveries ≥ 1 and limit ≥ 1")
        }
        var result = Reclaimed()
        var claimed = 0
        for stream in keys.readyStreams where claimed < limit {
            var cursor = "0-0"
            repeat {
                let step = try reclaimStep(stream, after: visibilityTimeout, cursor: cursor, count: min(limit - claimed, 100))
                cursor = step.cursor
                claimed += step.entries.count
                result.deleted += step.deleted
                for entry in step.entries {
                    if entry.deliveries > maxDeliveries {
                        try buryStalled(entry)
                        result.buried += 1
                    } else {
                        result.jobs += try accept([entry])
                    }
                }
            } while cursor != "0-0" && claimed < limit
        }
        return result
    }

    /// Claims for this consumer entries reserved longer than `min idle` ms ago (their worker
    /// probably died), one XAUTOCLAIM step. KEYS[1] ready stream. ARGV[1] group, ARGV[2] consumer,
    /// ARGV[3] min idle ms, ARGV[4] cursor, ARGV[5] count.
    /// Returns {next cursor, {{entry id, {field, value, …}, delivery count}, …}, deleted entries
    /// (Redis 7 drops from the pending list entries that were deleted from the stream)}.
    private static let reclaimScript = RedisScript("""
        local reply = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
        local claimed = {}
        for _, entry in ipairs(reply[2]) do
            local pending = redis.call('XPENDING', KEYS[1], ARGV[1], entry[1], entry[1], 1)
            claimed[#claimed + 1] = {entry[1], entry[2], pending[1][4]}
        end
        return {reply[1], claimed, #(reply[3] or {})}
        """)

    private func reclaimStep(
        _ stream: String, after minIdle: Duration, cursor: String, count: Int
    ) throws(QueueError) -> (cursor: String, entries: [DeliveredEntry], deleted: Int) {
        let reply = try connection.evaluate(
            Self.reclaimScript, keys: [stream],
            arguments: [QueueKeys.group, consumer, minIdle.wholeMilliseconds, cursor, count])
        guard let parts = reply.array, parts.count == 3, let next = parts[0].string, let items = parts[1].array,
            let deleted = parts[2].int
        else { throw .unexpectedReply(operation: "reclaim", reply: "\(reply)") }
        let entries = try items.map { (item) throws(QueueError) in
            guard let fields = item.array, fields.count == 3, let id = fields[0].string, let deliveries = fields[2].int else {
                throw .unexpectedReply(operation: "reclaim", reply: "\(item)")
            }
            return DeliveredEntry(stream: stream, id: id, fields: fields[1], deliveries: Int(deliveries))
        }
        return (next, entries, Int(deleted))
    }

    private func buryStalled(_ entry: DeliveredEntry) throws(QueueError) {
        let job = entry.jobText.flatMap { try? Job(encoded: $0) }
        let failure = JobFailure(
            errorClass: JobFailure.stalled,
            message: "delivered \(entry.deliveries - 1) times without an ack: the worker probably crashed on it")
        try bury(
            stream: entry.stream, entryID: entry.id, jobText: entry.jobText ?? "", failure: failure,
            attempts: job.map { $0.attempt + 1 } ?? entry.deliveries - 1, firstFailedAt: job?.firstFailedAt)
    }

    /// Records that a consumer is alive and forgets consumers silent for too long.
    /// KEYS[1] workers set. ARGV[1] consumer, ARGV[2] forget after ms. Returns 1.
    private static let heartbeatScript = ClockedScript("""
        redis.call('ZADD', KEYS[1], now, ARGV[1])
        redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
        return 1
        """)

    /// Records that this consumer is alive (see `QueueStats.liveWorkers`); call it every few
    /// seconds. Consumers silent for an hour are forgotten.
    public func heartbeat() throws(QueueError) {
        try evaluate(Self.heartbeatScript, keys: [keys.workers], arguments: [consumer, 3_600_000])
    }

    /// Removes a consumer from the group, unless it still has reserved entries.
    /// KEYS[1] workers set, KEYS[2…] ready streams. ARGV[1] group, ARGV[2] consumer.
    /// Returns 1 if removed, 0 if it still holds entries (settle or let them be reclaimed first).
    private static let deregisterScript = RedisScript("""
        for i = 2, #KEYS do
            local pending = redis.pcall('XPENDING', KEYS[i], ARGV[1], '-', '+', 1, ARGV[2])
            if pending.err == nil and #pending > 0 then return 0 end
        end
        for i = 2, #KEYS do redis.pcall('XGROUP', 'DELCONSUMER', KEYS[i], ARGV[1], ARGV[2]) end
        redis.call('ZREM', KEYS[1], ARGV[2])
        return 1
        """)

    /// Removes this consumer from the group on a clean stop. Refuses (returns false) while it
    /// still holds reserved jobs: settle them first, or leave them for `reclaim`.
    public func deregister() throws(QueueError) -> Bool {
        try connection.evaluate(
            Self.deregisterScript, keys: [keys.workers] + keys.readyStreams, arguments: [QueueKeys.group, consumer]
        ).int == 1
    }

    /// Removes consumers that hold no entries and were idle longer than a limit (left by
    /// processes that exited without deregistering). KEYS ready streams. ARGV[1] group,
    /// ARGV[2] idle ms. Returns the number of (stream, consumer) pairs removed.
    private static let removeIdleConsumersScript = RedisScript(ScriptPrologue.asMap + """
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

    /// Removes consumers that hold no jobs and have been idle longer than `idle`: those left by
    /// processes that died or exited without deregistering. Returns how many (per stream) went.
    @discardableResult
    public func removeIdleConsumers(idleLongerThan idle: Duration) throws(QueueError) -> Int {
        let reply = try connection.evaluate(
            Self.removeIdleConsumersScript, keys: keys.readyStreams, arguments: [QueueKeys.group, idle.wholeMilliseconds])
        guard let removed = reply.int else { throw .unexpectedReply(operation: "removeIdleConsumers", reply: "\(reply)") }
        return Int(removed)
    }
}
