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

    /// What it does to `object`, for people: "retry them now", "delete them", "send them to the dead letters".
    public func doing(_ object: String) -> String {
        switch self {
        case .retryNow: "retry \(object) now"
        case .delete: "delete \(object)"
        case .bury: "send \(object) to the dead letters"
        }
    }

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
    /// A deleted or buried job leaves the queue for good: its queued bit and second go, and its
    /// run's tally counts it out (deleted) or dead (buried).
    /// KEYS[1] delayed set, KEYS[2] dead stream, KEYS[3] queued bitmap, KEYS[4] queued per second,
    /// KEYS[5] queued seconds, KEYS[6] settled counts, KEYS[7…] the jobs' runs' tallies. ARGV[1] action (or 'retry-later': retry only
    /// jobs not due yet), ARGV[2] the dead
    /// letter's message, ARGV[3…] quintuples of member, its queued bit ('' none), the index in KEYS of
    /// its run's tally ('' none), its attempts, its first failure ('' none).
    /// Returns how many jobs were acted on.
    private static let actOnWaitingScript = ClockedScript(
        ScriptPrologue.releaseQueued + ScriptPrologue.countQueued + ScriptPrologue.tallyRun + """
        local acted = 0
        for i = 3, #ARGV, 5 do
            local job = ARGV[i]
            if ARGV[1] == 'retry' or ARGV[1] == 'retry-later' then
                -- 'retry-later' (a bulk action's) only a job not due yet: one already due (retried a moment
                -- ago, or met twice by the bulk action's scan) is on its way to its stream and is not counted again.
                local due = tonumber(redis.call('ZSCORE', KEYS[1], job))
                if due and (ARGV[1] == 'retry' or due > now) then
                    redis.call('ZADD', KEYS[1], 'XX', now, job)
                    acted = acted + 1
                end
            elseif redis.call('ZREM', KEYS[1], job) == 1 then
                acted = acted + 1
                releaseQueued(KEYS[3], ARGV[i + 1])
                local enqueuedAt = enqueuedAtOf(job)
                if enqueuedAt then countQueued(KEYS[4], KEYS[5], enqueuedAt, -1) end
                local tally = ARGV[i + 2] ~= '' and KEYS[tonumber(ARGV[i + 2])] or nil
                if ARGV[1] == 'delete' then
                    if tally then tallyRun(tally, 'enqueued', -1) end
                else
                    redis.call('HINCRBY', KEYS[6], 'dead', 1)
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
        try act(action, onWaiting: jobs, by: who, skippingDue: false)
    }

    /// `skippingDue`: retry now only the jobs not due yet (a bulk action's, which may meet a job twice).
    private func act(_ action: WaitingJobAction, onWaiting jobs: [Job], by who: String, skippingDue: Bool) throws(QueueError) -> Int {
        guard !jobs.isEmpty else { return 0 }
        let runs = Array(Set(jobs.compactMap(\.tallyingRun))).sorted()
        let firstTally = 7
        var arguments: [any RedisArgument] = [
            action == .retryNow && skippingDue ? "retry-later" : action.rawValue, "sent to the dead letters by \(who.prefix(100))",
        ]
        for job in jobs {
            let tally = job.tallyingRun.flatMap { runs.firstIndex(of: $0) }.map { String(firstTally + $0) } ?? ""
            arguments += [job.encoded, job.heldQueuedBit, tally, job.attempt, job.firstFailedAt.map(String.init) ?? ""]
        }
        let reply = try evaluate(
            Self.actOnWaitingScript,
            keys: [keys.delayed, keys.dead, keys.queued] + keys.queuedSince + [keys.settledCounts] + runs.map(keys.run), arguments: arguments)
        guard let acted = reply.int else { throw .unexpectedReply(operation: "waiting jobs", reply: "\(reply)") }
        return Int(acted)
    }
}

/// Which waiting jobs a listing or a bulk action is about: those matching every criterion given.
public struct WaitingJobFilter: Sendable, Hashable, CustomStringConvertible {
    public var reason: Job.Reason?
    /// A run id: a scheduler pass's (`2026-11-28/2`), or a night's, which takes all its passes.
    public var runID: String?
    /// True: only retries (jobs that failed at least once); false: only jobs not tried yet (a pause
    /// postponed them, or a check waits for its time); nil: both.
    public var retried: Bool?
    public var subscriptionIDs: Set<Int64>?

    public init(reason: Job.Reason? = nil, runID: String? = nil, retried: Bool? = nil, subscriptionIDs: Set<Int64>? = nil) {
        (self.reason, self.runID, self.retried, self.subscriptionIDs) = (reason, runID, retried, subscriptionIDs)
    }

    /// Every waiting job.
    public static let all = WaitingJobFilter()

    public var isEmpty: Bool { self == .all }

    /// "all", or the criteria as the audit trail and the logs name them: "reason=nightly run=… tries=retried".
    public var description: String {
        let named = [reason.map { "reason=\($0)" }, runID.map { "run=\($0)" }, retried.map { $0 ? "tries=retried" : "tries=not-tried" }].compactMap(\.self)
            + (subscriptionIDs ?? []).sorted().map { "subscription=\($0)" }
        return named.isEmpty ? "all" : named.joined(separator: " ")
    }

    public func matches(_ job: Job) -> Bool {
        if let reason, job.reason != reason { return false }
        if let runID, !SchedulerPassID.runID(job.runID, isIn: runID) { return false }
        if let retried, (job.attempt > 0) != retried { return false }
        if let subscriptionIDs, !subscriptionIDs.contains(job.subscriptionID) { return false }
        return true
    }

    /// A glob for ZSCAN's MATCH that every matching job's text fits, so that Redis sends only
    /// (nearly) those: `subscription|run|reason|attempt|enqueuedAt|firstFailedAt`, a field given or
    /// `*`. A job's text has exactly five `|`, as the glob does, so no `*` can reach into the next field.
    var pattern: String {
        let subscription = subscriptionIDs.flatMap { $0.count == 1 ? $0.first.map(String.init) : nil } ?? "*"
        // A night's name takes its passes too ("2026-11-28/2"); `matches` then drops the runs that only start alike.
        let run = runID.map { Self.escaped($0) + ($0.contains("/") ? "" : "*") } ?? "*"
        let attempt = retried.map { $0 ? "[1-9]*" : "0" } ?? "*"
        return "\(subscription)|\(run)|\(reason?.rawValue ?? "*")|\(attempt)|*|*"
    }

    /// `text` with the glob's special characters taken literally.
    private static func escaped(_ text: String) -> String {
        text.reduce(into: "") { escaped, character in
            if "*?[]\\^".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
    }
}

extension JobQueue {
    /// Members of the delayed set a bulk action's scan asks Redis to look at per call, and jobs a bulk
    /// action changes per script call, so that no call holds Redis for long however many jobs match.
    /// Measured over a million waiting jobs on a 2-core machine under a load of 7 to 30: a scan call
    /// of 500 took 1.4 ms on average (of 1,000: 2.2 to 3 ms); a script call of 250 took 4 ms to retry
    /// or delete them, 3.5 to 8 ms to bury them (p99 11 ms; of 1,000: 18 ms to bury). A million jobs took a minute.
    static let waitingScanCount = 500
    static let waitingActionBatch = 250

    /// How many waiting jobs match `filter` now: the size of the delayed set for all of them (O(1)),
    /// else a scan of it, 500 members a call. While jobs come and go meanwhile the scan may
    /// count one of them twice or miss it (SCAN's guarantee covers only members present throughout).
    public func countWaiting(matching filter: WaitingJobFilter = .all) throws(QueueError) -> Int {
        if filter.isEmpty {
            return Int(try connection.execute(["ZCARD", keys.delayed]).int ?? 0)
        }
        var count = 0
        try forEachWaitingScanPage(matching: filter) { count += $0.count }
        return count
    }

    /// Does `action` to every waiting job that matches `filter`, a batch of at most 250 per script
    /// call (`act(_:onWaiting:by:)`), as a scan of the delayed set finds them: Redis serves
    /// other clients between batches, however many jobs match. A job the promoter moves meanwhile
    /// is left alone; one the scan meets twice is acted on once (deleted or buried: it is gone;
    /// retried: it is due, and retry now takes only jobs not due yet). Returns how many it acted on.
    @discardableResult
    public func act(_ action: WaitingJobAction, onWaitingMatching filter: WaitingJobFilter, by who: String) throws(QueueError) -> Int {
        var acted = 0
        try forEachWaitingScanPage(matching: filter) { (jobs) throws(QueueError) in
            for batch in jobs.chunks(of: Self.waitingActionBatch) {
                acted += try act(action, onWaiting: Array(batch), by: who, skippingDue: true)
            }
        }
        return acted
    }

    /// The waiting jobs matching `filter`, soonest due first, from the `offset`-th match on: at most
    /// `limit`, looking through at most `lookLimit` members of the delayed set in due order
    /// (`complete` is false when it stopped there). For the console's list of waiting jobs by filter.
    public func delayedJobs(
        matching filter: WaitingJobFilter, offset: Int = 0, limit: Int = 100, lookLimit: Int = JobQueue.waitingScanLimit
    ) throws(QueueError) -> (jobs: [DelayedJob], complete: Bool) {
        guard offset >= 0, (1...1_000).contains(limit) else { throw .invalidArgument("a page of delayed jobs is 1...1000 from an offset ≥ 0") }
        var (found, skipped, looked) = ([DelayedJob](), 0, 0)
        while looked < lookLimit {
            let count = min(Self.depthSamplePage, lookLimit - looked)
            let page = try delayedJobs(offset: looked, limit: count)
            for item in page {
                guard let job = item.job, filter.matches(job) else { continue }
                if skipped < offset { skipped += 1 } else { found.append(item) }
                if found.count == limit { return (found, true) }
            }
            looked += page.count
            if page.count < count { return (found, true) }
        }
        return (found, false)
    }

    /// Scans the delayed set for jobs matching `filter` and hands each call's matches to `body`
    /// (none, when a call found none). Members that are not jobs are never handed on.
    private func forEachWaitingScanPage(
        matching filter: WaitingJobFilter, _ body: ([Job]) throws(QueueError) -> Void
    ) throws(QueueError) {
        var cursor = "0"
        repeat {
            let reply = try connection.execute(["ZSCAN", keys.delayed, cursor, "MATCH", filter.pattern, "COUNT", Self.waitingScanCount])
            guard let parts = reply.array, parts.count == 2, let next = parts[0].string, let flat = parts[1].array else {
                throw .unexpectedReply(operation: "waiting jobs", reply: "\(reply)")
            }
            let jobs = stride(from: 0, to: flat.count - 1, by: 2).compactMap { flat[$0].string.flatMap { try? Job(encoded: $0) } }
                .filter(filter.matches)
            if !jobs.isEmpty { try body(jobs) }
            cursor = next
        } while cursor != "0"
    }
}
