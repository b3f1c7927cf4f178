/// Why a job failed, as stored with its dead letter. Callers pass sanitized text: never a
/// receipt, a secret or a password.
public struct JobFailure: Sendable, Hashable {
    /// A short, stable name to group and filter failures by, e.g. "apple.21010" or "timeout".
    public let errorClass: String
    /// What happened, for a person; cut to 500 characters.
    public let message: String

    public init(errorClass: String, message: String) {
        self.errorClass = String(errorClass.prefix(100))
        self.message = String(message.prefix(500))
    }

    /// The error class of stream entries that are not jobs.
    public static let undecodable = "undecodable"
    /// The error class of jobs delivered too often without an ack (their worker kept dying).
    public static let stalled = "stalled"
}

/// What `retry` did with a failed job.
public enum RetryOutcome: Sendable, Hashable {
    /// In the delayed set, due after this delay, with its attempt count raised by one.
    case delayed(Duration)
    /// Out of attempts: moved to the dead letters.
    case buried
    /// Not reserved by this consumer any more (reclaimed by another); nothing changed.
    case notReserved
}

extension JobQueue {
    /// Settles a failed job: back to the delayed set after a backoff (`retryPolicy`), with its
    /// attempt raised by one and its first failure time recorded, or to the dead letters once
    /// it has run `maxAttempts` times.
    public func retry(_ reserved: ReservedJob, after failure: JobFailure) throws(QueueError) -> RetryOutcome {
        let job = reserved.job
        guard job.attempt + 1 < retryPolicy.maxAttempts else {
            return try bury(reserved, failure: failure) ? .buried : .notReserved
        }
        var next = job
        next.attempt += 1
        let delay = retryPolicy.backoff(attempt: job.attempt)
        let moved = try moveToDelayed(reserved, as: next, after: delay, asRetry: true)
        return moved ? .delayed(delay) : .notReserved
    }

    /// Moves a job back to the delayed set without charging an attempt: for jobs that could not
    /// run because the fleet is paused or halted. Returns false if it is no longer reserved by
    /// this consumer.
    @discardableResult
    public func postpone(_ reserved: ReservedJob, for delay: Duration) throws(QueueError) -> Bool {
        try moveToDelayed(reserved, as: reserved.job, after: delay, asRetry: false)
    }

    /// Moves a job to the dead letters at once, for failures no retry can fix; a sweep may
    /// enqueue its subscription again. Returns false if it is no longer reserved by this consumer.
    @discardableResult
    public func bury(_ reserved: ReservedJob, failure: JobFailure) throws(QueueError) -> Bool {
        try bury(
            stream: reserved.stream, entryID: reserved.entryID, jobText: reserved.job.encoded, failure: failure,
            attempts: reserved.job.attempt + 1, firstFailedAt: reserved.job.firstFailedAt)
    }

    /// Moves a reserved entry to the dead-letter stream. A dead letter is not queued: the
    /// subscription's queued bit (if the job holds it) is cleared, so the next pass may enqueue it.
    /// KEYS[1] its ready stream, KEYS[2] dead stream, KEYS[3] queued bitmap, KEYS[4] queued per second,
    /// KEYS[5] queued seconds, KEYS[6] settled counts, KEYS[7] (optional) its run's tally. ARGV[1] group, ARGV[2] consumer, ARGV[3] entry id, ARGV[4] job text, ARGV[5] error class, ARGV[6]
    /// message, ARGV[7] attempts, ARGV[8] first failure in ms ("" for now), ARGV[9] the subscription id
    /// whose queued bit the job holds, or "". Returns 1, or 0 if the entry is not (or no longer)
    /// reserved by this consumer.
    private static let buryScript = ClockedScript(
        ScriptPrologue.ownership + ScriptPrologue.releaseQueued + ScriptPrologue.countQueued + ScriptPrologue.tallyRun + """
        if not reservedBy(KEYS[1], ARGV[1], ARGV[3], ARGV[2]) then return 0 end
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
        redis.call('XDEL', KEYS[1], ARGV[3])
        releaseQueued(KEYS[3], ARGV[9])
        local enqueuedAt = enqueuedAtOf(ARGV[4])
        if enqueuedAt then countQueued(KEYS[4], KEYS[5], enqueuedAt, -1) end
        redis.call('HINCRBY', KEYS[6], 'dead', 1)
        if KEYS[7] then tallyRun(KEYS[7], 'dead', 1) end
        local firstFailure = ARGV[8] ~= '' and ARGV[8] or nowText
        redis.call('XADD', KEYS[2], '*', 'job', ARGV[4], 'error', ARGV[5], 'message', ARGV[6],
            'attempts', ARGV[7], 'first_failure', firstFailure, 'last_failure', nowText, 'buried_at', nowText)
        return 1
        """)

    @discardableResult
    func bury(
        stream: String, entryID: String, jobText: String, failure: JobFailure, attempts: Int, firstFailedAt: Int64?
    ) throws(QueueError) -> Bool {
        let job = try? Job(encoded: jobText)
        let reply = try evaluate(
            Self.buryScript,
            keys: [stream, keys.dead, keys.queued] + keys.queuedSince + [keys.settledCounts] + (job?.tallyingRun.map { [keys.run($0)] } ?? []),
            arguments: [
                QueueKeys.group, consumer, entryID, String(jobText.prefix(500)), failure.errorClass, failure.message,
                attempts, firstFailedAt.map(String.init) ?? "", job?.heldQueuedBit ?? "",
            ])
        return reply.int == 1
    }

    /// Moves a reserved job to the delayed set, due `delay` ms from now. It is still queued, so
    /// its subscription's queued bit stays set.
    /// KEYS[1] its ready stream, KEYS[2] delayed set, KEYS[3] settled counts. ARGV[1] group, ARGV[2]
    /// consumer, ARGV[3] entry id, ARGV[4] delay in ms, ARGV[5] the job as it should run next, ARGV[6]
    /// "stamp" for a retry (counted; now is recorded as its first failure if it has none: its text
    /// ends in '|'), else "".
    /// Returns 1, or 0 if the job is not (or no longer) reserved by this consumer.
    private static let delayScript = ClockedScript(ScriptPrologue.ownership + """
        if not reservedBy(KEYS[1], ARGV[1], ARGV[3], ARGV[2]) then return 0 end
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
        redis.call('XDEL', KEYS[1], ARGV[3])
        local job = ARGV[5]
        if ARGV[6] == 'stamp' then
            redis.call('HINCRBY', KEYS[3], 'retried', 1)
            if string.sub(job, -1) == '|' then job = job .. nowText end
        end
        redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), job)
        return 1
        """)

    private func moveToDelayed(
        _ reserved: ReservedJob, as job: Job, after delay: Duration, asRetry: Bool
    ) throws(QueueError) -> Bool {
        guard delay >= .zero else { throw .invalidArgument("a delay cannot be negative (\(delay))") }
        let reply = try evaluate(
            Self.delayScript, keys: [reserved.stream, keys.delayed, keys.settledCounts],
            arguments: [
                QueueKeys.group, consumer, reserved.entryID, delay.wholeMilliseconds, job.encoded,
                asRetry ? "stamp" : "",
            ])
        return reply.int == 1
    }
}
