import RedisClient

/// A job reserved by one consumer: it stays in its stream's pending list until that consumer
/// settles it (ack, retry, postpone, bury) or `reclaim` gives it to another consumer.
public struct ReservedJob: Sendable, Hashable {
    public let job: Job
    /// The ready stream holding the entry.
    public let stream: String
    /// The stream entry id, e.g. "1748736000000-0".
    public let entryID: String
    /// How many times the entry has been delivered, this time included (1 for a fresh job).
    public let deliveryCount: Int
    /// The consumer that reserved it: only that consumer settles it, and `renewLeases` renews it in its name.
    public let consumer: String
}

/// One stream entry as Redis delivered it, before decoding.
struct DeliveredEntry {
    let stream: String
    let id: String
    /// The entry's field/value list (or nil, should the entry be gone).
    let fields: RedisValue
    let deliveries: Int

    /// The `j` field's text, whatever it holds.
    var jobText: String? {
        guard let fields = fields.array else { return nil }
        return stride(from: 0, to: fields.count - 1, by: 2)
            .first { fields[$0].string == "j" }
            .map { String(decoding: fields[$0 + 1].bytes ?? [], as: UTF8.self) }
    }
}

extension JobQueue {
    /// Reserves up to `count` new jobs, high-priority ones first. When both streams are empty it
    /// waits up to `block` (pass `.zero` not to wait) and returns what arrives first: up to `count`
    /// from each stream, should both receive jobs at the same instant. The reply is awaited `block`
    /// plus the connection's command timeout.
    ///
    /// Entries that are not jobs are moved to the dead letters (error class "undecodable")
    /// instead of being returned, so one bad entry cannot stop the workers.
    public func reserve(count: Int = 1, block: Duration) throws(QueueError) -> [ReservedJob] {
        guard count >= 1 else { throw .invalidArgument("reserve count \(count) must be at least 1") }
        guard block >= .zero else { throw .invalidArgument("reserve cannot block for a negative \(block)") }
        var entries = try recreatingGroups { () throws(QueueError) in try take(count) }
        if entries.isEmpty, block > .zero {
            entries = try recreatingGroups { () throws(QueueError) in try waitForEntries(count, block: block) }
        }
        return try accept(entries)
    }

    /// Acknowledges a finished job: it leaves Redis for good, and a sweep may enqueue its
    /// subscription again. Call it only once the job's effects are durable. Returns false if the
    /// job is no longer reserved by this consumer (it was settled already, or reclaimed by another
    /// after the visibility timeout).
    @discardableResult
    public func ack(_ reserved: ReservedJob) throws(QueueError) -> Bool {
        try ack([reserved])[0] != nil
    }

    /// Acknowledges finished jobs and deletes them, so the streams do not grow without bound; each
    /// job has left the queue, so its subscription's queued bit (if the job holds it) is cleared.
    /// KEYS[1] queued bitmap, KEYS[2] queued per second, KEYS[3] queued seconds, KEYS[4] settled counts, KEYS[5…] the jobs'
    /// ready streams, then their runs' tallies. ARGV[1] group, ARGV[2] consumer, then per job five: the index in KEYS of its
    /// stream, its entry id, the subscription id whose queued bit it holds ("" if none), its enqueue
    /// time in ms, the index in KEYS of its run's tally (0 if it counts in none).
    /// Returns, per job, how long ago (ms, by the scripts' clock) it was first enqueued, or -1 if it
    /// is not (or no longer) reserved by this consumer.
    /// A batch costs a few commands, not four per job: one XPENDING per stream lists what this
    /// consumer holds (its own batch, a handful), then one XACK and one XDEL per stream, one
    /// BITFIELD for every queued bit (the same bits SETBIT numbers), one HINCRBY per second of
    /// enqueue (and two more for a second that empties) and two commands per run (a night's batch shares both).
    private static let ackScript = ClockedScript(ScriptPrologue.countQueued + ScriptPrologue.tallyRun + """
        local acked, owned, streams, seconds, runs = {}, {}, {}, {}, {}
        for i = 3, #ARGV, 5 do
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
        for i = 3, #ARGV, 5 do
            if owned[i] and ARGV[i + 2] ~= '' then
                bits[#bits + 1] = 'SET'; bits[#bits + 1] = 'u1'; bits[#bits + 1] = ARGV[i + 2]; bits[#bits + 1] = 0
            end
            if owned[i] then
                local second = math.floor(tonumber(ARGV[i + 3]) / 1000) * 1000
                seconds[second] = (seconds[second] or 0) + 1
                local run = tonumber(ARGV[i + 4])
                if run > 0 then runs[run] = (runs[run] or 0) + 1 end
            end
            acked[#acked + 1] = owned[i] and math.max(0, now - tonumber(ARGV[i + 3])) or -1
        end
        if #bits > 0 then redis.call('BITFIELD', KEYS[1], unpack(bits)) end
        for second, count in pairs(seconds) do countQueued(KEYS[2], KEYS[3], second, -count) end
        for run, count in pairs(runs) do tallyRun(KEYS[run], 'verified', count) end
        local done = 0
        for _, age in ipairs(acked) do if age >= 0 then done = done + 1 end end
        if done > 0 then redis.call('HINCRBY', KEYS[4], 'done', done) end
        return acked
        """)

    /// Acknowledges several finished jobs in one round trip (a worker's batch), as `ack` does one;
    /// returns, in order, each one's time from its first enqueue to done (by the scripts' clock,
    /// which stamped its enqueue), or nil for one no longer reserved by this consumer.
    public func ack(_ jobs: [ReservedJob]) throws(QueueError) -> [Duration?] {
        guard !jobs.isEmpty else { return [] }
        let streams = Array(Set(jobs.map(\.stream))).sorted()
        let runs = Array(Set(jobs.compactMap(\.job.tallyingRun))).sorted()
        var arguments: [any RedisArgument] = [QueueKeys.group, consumer]
        for job in jobs {
            arguments += [
                streams.firstIndex(of: job.stream)! + 5, job.entryID, job.job.heldQueuedBit, job.job.enqueuedAt,
                job.job.tallyingRun.map { runs.firstIndex(of: $0)! + 5 + streams.count } ?? 0,
            ]
        }
        let reply = try evaluate(
            Self.ackScript, keys: [keys.queued] + keys.queuedSince + [keys.settledCounts] + streams + runs.map(keys.run), arguments: arguments)
        guard let acked = reply.array, acked.count == jobs.count else {
            throw .unexpectedReply(operation: "ack", reply: "\(reply)")
        }
        return try acked.map { (reply) throws(QueueError) in
            guard let age = reply.int else { throw .unexpectedReply(operation: "ack", reply: "\(reply)") }
            return age >= 0 ? .milliseconds(age) : nil
        }
    }

    /// Reserves up to `count` new entries without blocking, draining the streams in KEYS order
    /// (high priority first). KEYS ready streams. ARGV[1] group, ARGV[2] consumer, ARGV[3] count.
    /// Returns {stream, entry id, {field, value, …}} per entry.
    private static let takeScript = RedisScript("""
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

    /// New entries without waiting, high priority first, at most `count` in all.
    private func take(_ count: Int) throws(QueueError) -> [DeliveredEntry] {
        let reply = try connection.evaluate(
            Self.takeScript, keys: keys.readyStreams, arguments: [QueueKeys.group, consumer, count])
        guard let taken = reply.array else { throw .unexpectedReply(operation: "reserve", reply: "\(reply)") }
        return try taken.map { (item) throws(QueueError) in
            guard let parts = item.array, parts.count == 3, let stream = parts[0].string, let id = parts[1].string else {
                throw .unexpectedReply(operation: "reserve", reply: "\(item)")
            }
            return DeliveredEntry(stream: stream, id: id, fields: parts[2], deliveries: 1)
        }
    }

    /// XREADGROUP … BLOCK on both streams: the first entries to arrive (at most `count` per stream).
    private func waitForEntries(_ count: Int, block: Duration) throws(QueueError) -> [DeliveredEntry] {
        let reply = try connection.execute(
            ["XREADGROUP", "GROUP", QueueKeys.group, consumer, "COUNT", count,
             "BLOCK", max(block.wholeMilliseconds, 1), "STREAMS"] + keys.readyStreams + [">", ">"],
            blockingFor: block)
        if reply == .null { return [] }  // RESP2's nil: the wait ended with nothing
        guard let streams = reply.array else { throw .unexpectedReply(operation: "reserve", reply: "\(reply)") }
        var entries: [DeliveredEntry] = []
        for stream in streams {
            guard let parts = stream.array, parts.count == 2, let key = parts[0].string, let items = parts[1].array else {
                throw .unexpectedReply(operation: "reserve", reply: "\(stream)")
            }
            for item in items {
                guard let entry = item.array, entry.count == 2, let id = entry[0].string else {
                    throw .unexpectedReply(operation: "reserve", reply: "\(item)")
                }
                entries.append(DeliveredEntry(stream: key, id: id, fields: entry[1], deliveries: 1))
            }
        }
        // Redis lists the streams in the order asked for, so high priority comes first.
        return entries
    }

    /// Decodes delivered entries; buries those that are not jobs.
    func accept(_ entries: [DeliveredEntry]) throws(QueueError) -> [ReservedJob] {
        var reserved: [ReservedJob] = []
        for entry in entries {
            do throws(QueueError) {
                guard let text = entry.jobText else { throw .undecodableJob("the entry has no 'j' field") }
                let job = try Job(encoded: text)
                reserved.append(ReservedJob(
                    job: job, stream: entry.stream, entryID: entry.id, deliveryCount: entry.deliveries, consumer: consumer))
            } catch .undecodableJob(let reason) {
                let failure = JobFailure(errorClass: JobFailure.undecodable, message: reason)
                try bury(
                    stream: entry.stream, entryID: entry.id, jobText: entry.jobText ?? "", failure: failure,
                    attempts: entry.deliveries, firstFailedAt: nil)
            }
        }
        return reserved
    }

    /// Runs `body`; if the consumer group is missing (someone flushed Redis while workers ran),
    /// creates it and runs `body` once more.
    private func recreatingGroups<T>(_ body: () throws(QueueError) -> T) throws(QueueError) -> T {
        do {
            return try body()
        } catch .redis(.server(let message)) where message.contains("NOGROUP") {
            try createGroups()
            return try body()
        }
    }
}
