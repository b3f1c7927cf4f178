import RedisClient

/// What an operator may do to a job waiting for a time (a retry after its backoff, a job a pause
/// postponed, a check scheduled for later).
public enum WaitingJobAction: String, Sendable, CaseIterable {
    /// Due now: the promoter moves it to its ready stream within a second, its attempts kept.
    case retryNow = "retry"
    /// Gone, this occurrence only: the subscription's next sweep queues it again when it is due.
    case delete
    /// To the dead letters (error class "operator"), where it can be replayed or purged.
    case bury

    /// What it did, for people: "retried now", "deleted", "sent to the dead letters".
    public var done: String {
        switch self {
        case .retryNow: "retried now"
        case .delete: "deleted"
        case .bury: "sent to the dead letters"
        }
    }
}

extension JobQueue {
    /// Acts on waiting jobs, each only if it is still waiting (a promoter may have moved it meanwhile).
    /// A deleted or buried job leaves the queue for good: its queued bit and minute go, and its
    /// run's tally counts it out (deleted) or dead (buried).
    /// KEYS[1] delayed set, KEYS[2] dead stream, KEYS[3] queued bitmap, KEYS[4] queued-since hash,
    /// KEYS[5] settled counts, KEYS[6…] the jobs' runs' tallies. ARGV[1] action, ARGV[2] the dead
    /// letter's message, ARGV[3…] quintuples of member, its queued bit ('' none), the index in KEYS of
    /// its run's tally ('' none), its attempts, its first failure ('' none).
    /// Returns how many jobs were acted on.
    private static let actOnWaitingScript = ClockedScript(
        ScriptPrologue.releaseQueued + ScriptPrologue.countQueued + ScriptPrologue.tallyRun + """
        local acted = 0
        for i = 3, #ARGV, 5 do
            local job = ARGV[i]
            if ARGV[1] == 'retry' then
                if redis.call('ZSCORE', KEYS[1], job) then
                    redis.call('ZADD', KEYS[1], 'XX', now, job)
                    acted = acted + 1
                end
            elseif redis.call('ZREM', KEYS[1], job) == 1 then
                acted = acted + 1
                releaseQueued(KEYS[3], ARGV[i + 1])
                local enqueuedAt = enqueuedAtOf(job)
                if enqueuedAt then countQueued(KEYS[4], enqueuedAt, -1) end
                local tally = ARGV[i + 2] ~= '' and KEYS[tonumber(ARGV[i + 2])] or nil
                if ARGV[1] == 'delete' then
                    if tally then tallyRun(tally, 'enqueued', -1) end
                else
                    redis.call('HINCRBY', KEYS[5], 'dead', 1)
                    if tally then tallyRun(tally, 'dead', 1) end
                    local firstFailure = ARGV[i + 4] ~= '' and ARGV[i + 4] or nowText
                    redis.call('XADD', KEYS[2], '*', 'job', job, 'error', 'operator', 'message', ARGV[2],
                        'attempts', ARGV[i + 3], 'first_failure', firstFailure, 'last_failure', nowText, 'buried_at', nowText)
                end
            end
        end
        return acted
        """)

    /// Does `action` to each of `jobs` that still waits; `by` names the operator in a dead letter's
    /// message. Returns how many it acted on.
    @discardableResult
    public func act(_ action: WaitingJobAction, onWaiting jobs: [Job], by who: String) throws(QueueError) -> Int {
        guard !jobs.isEmpty else { return 0 }
        let runs = Array(Set(jobs.compactMap(\.tallyingRun))).sorted()
        let firstTally = 6
        var arguments: [any RedisArgument] = [action.rawValue, "sent to the dead letters by \(who.prefix(100))"]
        for job in jobs {
            let tally = job.tallyingRun.flatMap { runs.firstIndex(of: $0) }.map { String(firstTally + $0) } ?? ""
            arguments += [job.encoded, job.heldQueuedBit, tally, job.attempt, job.firstFailedAt.map(String.init) ?? ""]
        }
        let reply = try evaluate(
            Self.actOnWaitingScript,
            keys: [keys.delayed, keys.dead, keys.queued, keys.queuedSince, keys.settledCounts] + runs.map(keys.run), arguments: arguments)
        guard let acted = reply.int else { throw .unexpectedReply(operation: "waiting jobs", reply: "\(reply)") }
        return Int(acted)
    }
}
