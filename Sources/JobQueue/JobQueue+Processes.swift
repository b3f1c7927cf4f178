import RedisClient

/// One worker process of the fleet, as its heartbeat last reported it.
public struct WorkerProcess: Sendable, Hashable {
    /// `JobQueue.processName`: its consumers are named after it (`consumerName(thread:)`).
    public var name: String
    public var host: String
    public var pid: Int
    public var threads: Int
    /// When it started and when it last reported, in ms since the epoch (its start on its own clock,
    /// the report on Redis's).
    public var startedAt: Int64
    public var lastSeen: Int64
    /// How long it has not reported, on Redis's clock, filled in by the reader: a heartbeat comes
    /// every few seconds, so a long silence is a process stopped (SIGSTOP, a frozen container), cut
    /// off from Redis, or dead without saying goodbye.
    public var silentFor: Duration = .zero
    /// Jobs it settled for good (verified, refused, failed for good, skipped or dead) since it started.
    public var jobsDone: Int
    /// The jobs its threads hold right now (`JobQueue.jobsInHand`), filled in by the reader.
    public var inHand: [HeldJob] = []

    public init(name: String, host: String, pid: Int, threads: Int, startedAt: Int64, lastSeen: Int64 = 0, jobsDone: Int) {
        (self.name, self.host, self.pid, self.threads) = (name, host, pid, threads)
        (self.startedAt, self.lastSeen, self.jobsDone) = (startedAt, lastSeen, jobsDone)
    }
}

/// A job a worker thread holds, and how long since its lease was taken or last renewed (Redis's
/// idle time of the entry): once that passes the visibility timeout, another worker may take it.
public struct HeldJob: Sendable, Hashable {
    public var job: Job
    public var idle: Duration

    public init(job: Job, idle: Duration) {
        (self.job, self.idle) = (job, idle)
    }
}

extension JobQueue {
    /// KEYS[1] processes set, KEYS[2] process reports. ARGV[1] process, ARGV[2] its report
    /// ("host|pid|threads|started|done"), ARGV[3] forget after ms. Returns 1.
    private static let reportProcessScript = ClockedScript(ScriptPrologue.noteProcess + """
        noteProcess(KEYS[1], KEYS[2], ARGV[1], ARGV[3])
        redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
        return 1
        """)

    /// Tells the fleet about this worker process (its heartbeat does, every few seconds).
    /// Processes silent for an hour are forgotten.
    public func reportProcess(_ process: WorkerProcess) throws(QueueError) {
        let report = "\(process.host)|\(process.pid)|\(process.threads)|\(process.startedAt)|\(process.jobsDone)"
        try evaluate(Self.reportProcessScript, keys: [keys.processes, keys.processReports], arguments: [process.name, report, 3_600_000])
    }

    /// KEYS[1] processes set, KEYS[2] process reports. ARGV[1] process. Returns 1.
    private static let forgetProcessScript = RedisScript("""
        redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('HDEL', KEYS[2], ARGV[1])
        return 1
        """)

    /// Forgets a process that stops cleanly (its heartbeat's last word), so that only the ones that
    /// went silent without a goodbye stay listed.
    public func forgetProcess(_ name: String) throws(QueueError) {
        _ = try connection.evaluate(Self.forgetProcessScript, keys: [keys.processes, keys.processReports], arguments: [name])
    }

    /// KEYS[1] processes set, KEYS[2] process reports. ARGV[1] window ms.
    /// Returns {process, last report ms, report, ms since that report, …}, the most recent first.
    private static let processesScript = ClockedScript("""
        local reply = {}
        local recent = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', now - tonumber(ARGV[1]), 'WITHSCORES')
        for i = 1, #recent, 2 do
            local report = redis.call('HGET', KEYS[2], recent[i]) or ''
            reply[#reply + 1] = {recent[i], recent[i + 1], report, now - tonumber(recent[i + 1])}
        end
        return reply
        """)

    /// The worker processes that reported within `window` and did not stop cleanly since, by name,
    /// each with how long it has been silent and, for those `holdingJobs` picks, the jobs it holds now
    /// (reading them walks every stream's pending entries: a reader every scrape asks only for a few).
    public func processes(
        within window: Duration = .seconds(600), holdingJobs: (WorkerProcess) -> Bool = { _ in true }
    ) throws(QueueError) -> [WorkerProcess] {
        let reply = try evaluate(Self.processesScript, keys: [keys.processes, keys.processReports], arguments: [window.wholeMilliseconds])
        guard let rows = reply.array else { throw .unexpectedReply(operation: "processes", reply: "\(reply)") }
        let processes = rows.compactMap { row -> WorkerProcess? in
            guard let parts = row.array, parts.count == 4, let name = parts[0].string, let seen = parts[1].string.flatMap({ Int64($0) }),
                let fields = parts[2].string?.split(separator: "|", omittingEmptySubsequences: false), fields.count == 5,
                let pid = Int(fields[1]), let threads = Int(fields[2]), let started = Int64(fields[3]), let done = Int(fields[4]),
                let silent = parts[3].int
            else { return nil }
            var process = WorkerProcess(
                name: name, host: String(fields[0]), pid: pid, threads: threads, startedAt: started, lastSeen: seen, jobsDone: done)
            process.silentFor = .milliseconds(max(0, silent))
            return process
        }.sorted { $0.name < $1.name }
        guard processes.contains(where: holdingJobs) else { return processes }
        let inHand = try jobsInHand()
        return processes.map { process in
            guard holdingJobs(process) else { return process }
            var holding = process
            holding.inHand = inHand.filter { $0.consumer.hasPrefix(process.name + "-") }.map { HeldJob(job: $0.job, idle: $0.idle) }
            return holding
        }
    }

    /// Reserved jobs and who holds them, up to `limit` per stream.
    /// KEYS ready streams. ARGV[1] group, ARGV[2] limit. Returns {consumer, job text, idle ms, …}.
    private static let jobsInHandScript = RedisScript("""
        local reply = {}
        for _, stream in ipairs(KEYS) do
            local pending = redis.pcall('XPENDING', stream, ARGV[1], '-', '+', tonumber(ARGV[2]))
            if pending.err == nil then
                for _, entry in ipairs(pending) do
                    local found = redis.call('XRANGE', stream, entry[1], entry[1])[1]
                    if found then
                        for i = 1, #found[2], 2 do
                            if found[2][i] == 'j' then reply[#reply + 1] = {entry[2], found[2][i + 1], entry[3]} end
                        end
                    end
                end
            end
        end
        return reply
        """)

    /// The jobs reserved now, each with its consumer and the idle time of its lease: a few per
    /// thread, at most `limit` per stream.
    public func jobsInHand(limit: Int = 5_000) throws(QueueError) -> [(consumer: String, job: Job, idle: Duration)] {
        let reply = try connection.evaluate(Self.jobsInHandScript, keys: keys.readyStreams, arguments: [QueueKeys.group, limit])
        guard let rows = reply.array else { throw .unexpectedReply(operation: "jobs in hand", reply: "\(reply)") }
        return rows.compactMap { row in
            guard let parts = row.array, parts.count == 3, let consumer = parts[0].string, let text = parts[1].string,
                let job = try? Job(encoded: text), let idle = parts[2].int
            else { return nil }
            return (consumer, job, .milliseconds(idle))
        }
    }
}
