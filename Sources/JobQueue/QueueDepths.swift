import RedisClient

/// The queues one by one, with their depth and the age of their oldest job, for the console's
/// Queues page (Sidekiq Web's Queues): the two ready streams (high and normal priority), each with
/// the jobs workers hold from it; the jobs waiting for a time; the dead letters. Every figure here is
/// exact and costs Redis O(1) or O(log n) (one script, at one instant); `sample` is the first jobs
/// of each queue, to break them down by what only the ledger knows (app, backend).
public struct QueueDepths: Sendable {
    /// One ready stream: its priority's jobs waiting for a worker and those a worker holds.
    public struct ReadyQueue: Sendable, Hashable {
        public var priority: JobPriority
        /// Jobs no worker has taken yet.
        public var ready: Int
        /// Jobs a worker holds (reserved, not yet settled).
        public var inFlight: Int
        /// How long the next job a worker takes has waited in this stream (since it entered it: its
        /// enqueue, its return from waiting for a time, or its replay): Sidekiq's latency. Nil when none is ready.
        public var latency: Duration?
    }

    /// High priority first.
    public var ready: [ReadyQueue]
    /// Jobs waiting for a time that is due (the promoter moves them to their stream within a second), and later.
    public var waitingDue: Int
    public var waitingLater: Int
    /// How long the soonest-due waiting job has been due: more than a second or two means no promoter runs
    /// (no worker process). Nil when none is due.
    public var waitingOverdue: Duration?
    /// When the soonest waiting job that is not due yet falls due. Nil when none waits for later.
    public var nextDueIn: Duration?
    public var dead: Int
    /// How long ago the oldest dead letter was buried. Nil when there is none.
    public var oldestDeadAge: Duration?
    /// How long ago the oldest job in the queue (ready, in flight or waiting) was first enqueued, to
    /// the second, as `QueueStats.oldestJobAge`: retries and pauses do not restart it.
    public var oldestJobAge: Duration?
    /// The time the queue's scripts read as now (ms since the epoch), which a sampled job's
    /// `enqueuedAt` is on.
    public var now: Int64
    public var sample: QueueSample

    /// Jobs waiting for a time, due or not.
    public var waiting: Int { waitingDue + waitingLater }
}

/// A job's priority: which ready stream it takes (`Job.Reason.isHighPriority`).
public enum JobPriority: String, Sendable, Hashable, CaseIterable {
    case high, normal

    public init(_ reason: Job.Reason) { self = reason.isHighPriority ? .high : .normal }
}

/// The first jobs of each queue, read as they stand: up to `limit` of the ready jobs of each
/// stream (the next a worker takes), of the jobs workers hold from each, and of the waiting jobs
/// (the soonest due). A job's text holds its subscription, run, reason and times, not its app or
/// backend: those are the ledger's, looked up for the sample's subscriptions.
///
/// Why a sample, not counters: the scripts that move a job (enqueue, reserve, ack, retry, bury,
/// replay, the operator's actions) see only its text, so a count per app and backend would need
/// the app and backend in every job's text, a change to the format every queued job is stored in;
/// and a full breakdown read from Redis and PostgreSQL would scan millions of jobs on a big night.
/// The first `limit` of each queue are the ones an operator asks about ("what is stuck at the
/// front?"), read in pages of a thousand so that Redis never blocks on them; `complete` says
/// whether that was every job.
public struct QueueSample: Sendable {
    public enum Place: String, Sendable, Hashable, CaseIterable {
        case ready, inFlight = "in-flight", waiting
    }

    public struct Entry: Sendable, Hashable {
        public var place: Place
        public var job: Job
    }

    /// Entries that are not jobs (an undecodable text) are left out.
    public var entries: [Entry]
    /// The most read of each place and priority (of waiting jobs: of all of them).
    public var limit: Int
    /// Whether the sample holds every job of the queue: no place held more than `limit`.
    public var complete: Bool
}

extension JobQueue {
    /// The most jobs `depths` reads of each ready stream, of the jobs held from each, and of the
    /// waiting jobs, for the breakdown by app and backend.
    public static let depthSampleLimit = 10_000
    /// Entries per read of the sample: each read costs Redis well under a millisecond.
    static let depthSamplePage = 1_000

    /// Everything `QueueDepths` shows but its sample, at one instant.
    /// KEYS[1] high ready stream, KEYS[2] ready stream, KEYS[3] delayed, KEYS[4] dead, KEYS[5] queued seconds.
    /// ARGV[1] group. Returns {lane, lane, due, later, soonest due time in ms | false, dead, the oldest dead
    /// letter's buried_at | false, age in ms of the oldest job's second of first enqueue (-1: none), now};
    /// a lane is {ready, in flight, ms the next ready entry has waited (-1: none), the group's last delivered id}.
    /// A stream entry's id is its time on Redis's own clock (XADD stamps it), so a lane's wait is read
    /// against `TIME`, whatever clock the scripts run on; due and enqueue times against the scripts' `now`.
    private static let depthsScript = ClockedScript(ScriptPrologue.asMap + ScriptPrologue.oldestQueued + """
        local real = redis.call('TIME')
        local realNow = tonumber(real[1]) * 1000 + math.floor(tonumber(real[2]) / 1000)
        local function lane(stream)
            local pending, last = 0, '0-0'
            local groups = redis.pcall('XINFO', 'GROUPS', stream)
            for _, flat in ipairs(groups.err == nil and groups or {}) do
                local group = asMap(flat)
                if group.name == ARGV[1] then pending, last = group.pending, group['last-delivered-id'] end
            end
            local next = redis.call('XRANGE', stream, '(' .. last, '+', 'COUNT', 1)[1]
            local waited = next and realNow - tonumber(string.match(next[1], '^(%d+)')) or -1
            return {redis.call('XLEN', stream) - pending, pending, waited, last}
        end
        local soonest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')[2]
        local later = redis.call('ZRANGE', KEYS[3], '(' .. nowText, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')[2]
        local oldestDead = redis.call('XRANGE', KEYS[4], '-', '+', 'COUNT', 1)[1]
        local buriedAt = false
        if oldestDead then
            local fields = asMap(oldestDead[2])
            buriedAt = fields.buried_at or false
        end
        return {lane(KEYS[1]), lane(KEYS[2]),
            redis.call('ZCOUNT', KEYS[3], '-inf', now), redis.call('ZCOUNT', KEYS[3], '(' .. nowText, '+inf'),
            soonest or false, later or false, redis.call('XLEN', KEYS[4]), buriedAt,
            oldestQueuedAge(KEYS[5]), now}
        """)

    /// Each queue's depth and the age of its oldest job, and the first `sampleLimit` jobs of each
    /// (`QueueSample`) for a breakdown by what the ledger knows of their subscriptions.
    public func depths(sampleLimit: Int = JobQueue.depthSampleLimit) throws(QueueError) -> QueueDepths {
        guard (0...100_000).contains(sampleLimit) else { throw .invalidArgument("a queue sample is 0...100000 jobs a place") }
        let reply = try evaluate(
            Self.depthsScript, keys: keys.readyStreams + [keys.delayed, keys.dead, keys.queuedSeconds], arguments: [QueueKeys.group])
        let unexpected = QueueError.unexpectedReply(operation: "queue depths", reply: "\(reply)")
        guard let parts = reply.array, parts.count == 10, let high = DepthLane(parts[0]), let normal = DepthLane(parts[1]),
            let due = parts[2].int, let later = parts[3].int, let dead = parts[6].int, let oldest = parts[8].int, let now = parts[9].int
        else { throw unexpected }
        let soonest = parts[4].string.flatMap(Double.init).map(Int64.init)
        let nextLater = parts[5].string.flatMap(Double.init).map(Int64.init)
        let buriedAt = parts[7].string.flatMap { Int64($0) }

        var entries: [QueueSample.Entry] = []
        var complete = true
        for (stream, lane) in zip(keys.readyStreams, [high, normal]) {
            let ready = try streamJobs(stream, after: lane.lastDelivered, through: "+", limit: sampleLimit)
            let held = try streamJobs(stream, after: nil, through: lane.lastDelivered, limit: sampleLimit)
            entries += ready.jobs.map { QueueSample.Entry(place: .ready, job: $0) } + held.jobs.map { QueueSample.Entry(place: .inFlight, job: $0) }
            complete = complete && ready.complete && held.complete
        }
        let waiting = try waitingJobs(limit: sampleLimit)
        entries += waiting.jobs.map { QueueSample.Entry(place: .waiting, job: $0) }
        complete = complete && waiting.complete

        func queue(_ priority: JobPriority, _ lane: DepthLane) -> QueueDepths.ReadyQueue {
            .init(priority: priority, ready: lane.ready, inFlight: lane.inFlight, latency: lane.waited < 0 ? nil : .milliseconds(lane.waited))
        }
        return QueueDepths(
            ready: [queue(.high, high), queue(.normal, normal)], waitingDue: Int(due), waitingLater: Int(later),
            waitingOverdue: soonest.flatMap { $0 <= now ? .milliseconds(now - $0) : nil },
            nextDueIn: nextLater.map { .milliseconds(max(0, $0 - now)) }, dead: Int(dead),
            oldestDeadAge: buriedAt.map { .milliseconds(max(0, now - $0)) }, oldestJobAge: oldest < 0 ? nil : .milliseconds(oldest), now: now,
            sample: QueueSample(entries: entries, limit: sampleLimit, complete: complete))
    }

    /// The jobs of `stream` after the entry `after` (nil: from the first) through `through` ("+": the
    /// last), at most `limit`, a page at a time; `complete` when the range held no more.
    private func streamJobs(_ stream: String, after: String?, through: String, limit: Int) throws(QueueError) -> (jobs: [Job], complete: Bool) {
        // Nothing was ever delivered: no entry is held.
        if after == nil, through == "0-0" { return ([], true) }
        var (jobs, start, read) = ([Job](), after.map { "(" + $0 } ?? "-", 0)
        while read < limit {
            let count = min(Self.depthSamplePage, limit - read)
            let reply = try connection.execute(["XRANGE", stream, start, through, "COUNT", count])
            guard let page = reply.array else { throw .unexpectedReply(operation: "queue sample", reply: "\(reply)") }
            for entry in page {
                guard let parts = entry.array, parts.count == 2, let fields = parts[1].array else { continue }
                if let index = stride(from: 0, to: fields.count - 1, by: 2).first(where: { fields[$0].string == "j" }),
                   let text = fields[index + 1].string, let job = try? Job(encoded: text) {
                    jobs.append(job)
                }
            }
            read += page.count
            guard page.count == count, let last = page.last?.array?.first?.string else { return (jobs, true) }
            start = "(" + last
        }
        // The limit was reached: complete only if nothing follows.
        let more = try connection.execute(["XRANGE", stream, start, through, "COUNT", 1]).array?.isEmpty == false
        return (jobs, !more)
    }

    /// The soonest-due `limit` waiting jobs, a page at a time; `complete` when that was all of them.
    private func waitingJobs(limit: Int) throws(QueueError) -> (jobs: [Job], complete: Bool) {
        var jobs: [Job] = []
        var offset = 0
        while offset < limit {
            let count = min(Self.depthSamplePage, limit - offset)
            let reply = try connection.execute(["ZRANGE", keys.delayed, offset, offset + count - 1])
            guard let page = reply.array else { throw .unexpectedReply(operation: "queue sample", reply: "\(reply)") }
            jobs += page.compactMap { $0.string.flatMap { try? Job(encoded: $0) } }
            offset += page.count
            if page.count < count { return (jobs, true) }
        }
        return (jobs, try connection.execute(["ZCARD", keys.delayed]).int ?? 0 <= Int64(limit))
    }
}

/// One ready stream's part of the depths script's reply.
private struct DepthLane {
    var ready: Int
    var inFlight: Int
    var waited: Int64
    var lastDelivered: String

    init?(_ value: RedisValue) {
        guard let parts = value.array, parts.count == 4, let ready = parts[0].int, let inFlight = parts[1].int, let waited = parts[2].int,
            let last = parts[3].string
        else { return nil }
        (self.ready, self.inFlight, self.waited, lastDelivered) = (Int(ready), Int(inFlight), waited, last)
    }
}
