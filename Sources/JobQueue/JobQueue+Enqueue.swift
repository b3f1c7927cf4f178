import RedisClient

/// What a bulk enqueue did.
public struct EnqueueResult: Sendable, Hashable {
    /// Jobs added to a ready stream.
    public var added: Int
    /// Subscriptions skipped because a job of theirs is already queued (ready, reserved or
    /// delayed), whichever run enqueued it, or because they were listed twice.
    public var alreadyQueued: Int
}

extension JobQueue {
    /// How long an occurrence's once-key keeps its job from being added again: longer than Apple
    /// keeps re-sending a notification it has no 200 for.
    public static let onceMemory: Duration = .seconds(3 * 24 * 3600)
    /// How long a run's tally (`QueueKeys.run`) is kept after its last enqueue: past a week of
    /// retries, so the run's figures are whole when the ledger records them.
    public static let runMemory: Duration = .seconds(8 * 24 * 3600)
    /// Subscriptions per script call: big enough to amortize the round trip, small enough that
    /// one call blocks Redis for only a millisecond or two.
    static let enqueueBatch = 1000
    /// Script calls per pipeline: bounds the memory of a very large enqueue.
    static let enqueuePipelineDepth = 16

    /// Adds one job per subscription unless the subscription is already queued (its bit is set),
    /// and sets the bit of each one added; the job's ack or burial clears it again.
    /// KEYS[1] ready stream, KEYS[2] queued bitmap, KEYS[3] queued per second, KEYS[4] queued seconds, KEYS[5] the run's tally.
    /// ARGV[1] run id, ARGV[2] reason letter (a deduplicated reason), ARGV[3] the tally's lifetime in
    /// seconds, ARGV[4…] subscription ids. Returns the number added.
    private static let enqueueScript = ClockedScript(ScriptPrologue.freshJob + ScriptPrologue.countQueued + """
        local added = 0
        for i = 4, #ARGV do
            if redis.call('SETBIT', KEYS[2], ARGV[i], 1) == 0 then
                redis.call('XADD', KEYS[1], '*', 'j', freshJob(ARGV[i], ARGV[1], ARGV[2]))
                added = added + 1
            end
        end
        if added > 0 then
            countQueued(KEYS[3], KEYS[4], now, added)
            redis.call('HINCRBY', KEYS[5], 'enqueued', added)
            redis.call('EXPIRE', KEYS[5], ARGV[3])
        end
        return added
        """)

    /// Enqueues one job per subscription that has no deduplicated job in the queue yet (ready,
    /// reserved, or delayed for a retry or a pause), in the stream the reason's priority selects.
    /// So a pass that runs while the last one's jobs still wait adds nothing for them, whatever
    /// its run id; a subscription is enqueued again once its job was acked or buried.
    ///
    /// All ids are checked (0...4294967295) before anything is sent. Jobs go in batches, one Lua
    /// call each, pipelined. If Redis fails halfway, some batches are in; calling again adds
    /// exactly the rest.
    @discardableResult
    public func enqueue(
        subscriptionIDs: some Collection<Int64>, run runID: String, reason: Job.Reason
    ) throws(QueueError) -> EnqueueResult {
        try Job.validate(runID: runID)
        guard reason.isDeduplicated else {
            throw .invalidArgument(
                "the bulk enqueue de-duplicates, and jobs of reason '\(reason)' are not deduplicated: "
                    + "enqueue them one at a time with enqueue(subscriptionID:run:reason:)")
        }
        for id in subscriptionIDs { try Job.validate(subscriptionID: id) }

        let keys = [
            reason.isHighPriority ? self.keys.readyHigh : self.keys.ready, self.keys.queued,
        ] + self.keys.queuedSince + [self.keys.run(runID)]
        let header: [any RedisArgument] = [runID, reason.rawValue, Self.runMemory.wholeMilliseconds / 1000]
        var added = 0
        for pipelined in Array(subscriptionIDs).chunks(of: Self.enqueueBatch).chunks(of: Self.enqueuePipelineDepth) {
            let calls = pipelined.map { batch in
                RedisScriptCall(keys: keys, arguments: header + batch.map { $0 as any RedisArgument })
            }
            for reply in try evaluate(Self.enqueueScript, pipelining: calls) {
                guard let count = reply.int else { throw .unexpectedReply(operation: "enqueue", reply: "\(reply)") }
                added += Int(count)
            }
        }
        return EnqueueResult(added: added, alreadyQueued: subscriptionIDs.count - added)
    }

    /// Adds one job now, whatever is queued: for a job that answers one event (a notification).
    /// Its reason is not deduplicated, so it neither reads nor sets the queued bitmap.
    /// KEYS[1] ready stream, KEYS[2] queued per second, KEYS[3] queued seconds, KEYS[4] (optional) the occurrence's once-key.
    /// ARGV[1] subscription id, ARGV[2] run id, ARGV[3] reason letter, ARGV[4] the once-key's lifetime
    /// in seconds. Returns the job's text, or false when the once-key says the occurrence's job was enqueued.
    private static let enqueueOneScript = ClockedScript(ScriptPrologue.freshJob + ScriptPrologue.countQueued + """
        if KEYS[4] and not redis.call('SET', KEYS[4], '1', 'NX', 'EX', ARGV[4]) then return false end
        local job = freshJob(ARGV[1], ARGV[2], ARGV[3])
        redis.call('XADD', KEYS[1], '*', 'j', job)
        countQueued(KEYS[2], KEYS[3], now, 1)
        return job
        """)

    /// Enqueues one job for `subscriptionID` now, in the stream the reason's priority selects,
    /// whatever is queued. For jobs that answer one event (an App Store notification, a
    /// registration); the reason must not be deduplicated, so the job never clears the queued bit
    /// of a sweep's job.
    ///
    /// With `once`, a name for the occurrence (e.g. "notification-42"), the job is added at most
    /// once per occurrence within `onceMemory`, however often this is called: a caller that
    /// crashed after enqueueing, before it could note so, can simply call again. Returns nil then.
    @discardableResult
    public func enqueue(
        subscriptionID: Int64, run runID: String, reason: Job.Reason, once occurrence: String? = nil
    ) throws(QueueError) -> Job? {
        try Job.validate(runID: runID)
        try Job.validate(subscriptionID: subscriptionID)
        try Self.refuseDeduplicated(reason)
        let stream = reason.isHighPriority ? keys.readyHigh : keys.ready
        let reply = try evaluate(
            Self.enqueueOneScript, keys: [stream] + keys.queuedSince + (occurrence.map { [keys.once($0)] } ?? []),
            arguments: [subscriptionID, runID, reason.rawValue, Self.onceMemory.wholeMilliseconds / 1000])
        if occurrence != nil, reply == .null { return nil }
        guard let text = reply.string else { throw .unexpectedReply(operation: "enqueue", reply: "\(reply)") }
        return try Job(encoded: text)
    }

    /// Puts `job` in the delayed set, due at `dueAt` (ms since the epoch); `promoteDue` moves it to
    /// its ready stream then. Idempotent per job: scheduling an equal job again only sets its due
    /// time (so give a "check after renewal" job a fixed `enqueuedAt`, such as its due time). Like
    /// `enqueue(subscriptionID:run:reason:)`, it takes only reasons that are not deduplicated.
    /// Returns whether the job was new to the delayed set.
    @discardableResult
    public func schedule(_ job: Job, at dueAt: Int64) throws(QueueError) -> Bool {
        try Job.validate(subscriptionID: job.subscriptionID)
        try Job.validate(runID: job.runID)
        try Self.refuseDeduplicated(job.reason)
        let reply = try connection.evaluate(
            Self.scheduleScript, keys: [keys.delayed] + keys.queuedSince, arguments: [dueAt, job.encoded, job.enqueuedAt])
        return reply.int == 1
    }

    /// KEYS[1] delayed set, KEYS[2] queued per second, KEYS[3] queued seconds. ARGV[1] due time in ms, ARGV[2] job text,
    /// ARGV[3] its enqueue time in ms. Returns 1 if the job was new to the delayed set, else 0.
    private static let scheduleScript = RedisScript(ScriptPrologue.countQueued + """
        if redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
        countQueued(KEYS[2], KEYS[3], ARGV[3], 1)
        return 1
        """)

    /// The single-job paths set no queued bit, so a job of theirs must not clear one on ack.
    private static func refuseDeduplicated(_ reason: Job.Reason) throws(QueueError) {
        guard !reason.isDeduplicated else {
            throw .invalidArgument(
                "jobs of reason '\(reason)' are deduplicated across the queue: enqueue them with "
                    + "enqueue(subscriptionIDs:run:reason:)")
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
