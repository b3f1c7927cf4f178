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
    /// Jobs it settled for good (verified, refused, failed for good, skipped or dead) since it started.
    public var jobsDone: Int
    /// The jobs its threads hold right now (`JobQueue.jobsInHand`), filled in by the reader.
    public var inHand: [Job] = []

    public init(name: String, host: String, pid: Int, threads: Int, startedAt: Int64, lastSeen: Int64 = 0, jobsDone: Int) {
        (self.name, self.host, self.pid, self.threads) = (name, host, pid, threads)
        (self.startedAt, self.lastSeen, self.jobsDone) = (startedAt, lastSeen, jobsDone)
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

    /// KEYS[1] processes set, KEYS[2] process reports. ARGV[1] window ms.
    /// Returns {process, last report ms, report, …}, the most recent first.
    private static let processesScript = ClockedScript("""
        local reply = {}
        local recent = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', now - tonumber(ARGV[1]), 'WITHSCORES')
        for i = 1, #recent, 2 do
            reply[#reply + 1] = {recent[i], recent[i + 1], redis.call('HGET', KEYS[2], recent[i]) or ''}
        end
        return reply
        """)

    /// The worker processes that reported within `window`, by name, each with the jobs it holds now.
    public func processes(within window: Duration = .seconds(30)) throws(QueueError) -> [WorkerProcess] {
        let reply = try evaluate(Self.processesScript, keys: [keys.processes, keys.processReports], arguments: [window.wholeMilliseconds])
        guard let rows = reply.array else { throw .unexpectedReply(operation: "processes", reply: "\(reply)") }
        let inHand = try jobsInHand()
        return rows.compactMap { row -> WorkerProcess? in
            guard let parts = row.array, parts.count == 3, let name = parts[0].string, let seen = parts[1].string.flatMap({ Int64($0) }),
                let fields = parts[2].string?.split(separator: "|", omittingEmptySubsequences: false), fields.count == 5,
                let pid = Int(fields[1]), let threads = Int(fields[2]), let started = Int64(fields[3]), let done = Int(fields[4])
            else { return nil }
            var process = WorkerProcess(
                name: name, host: String(fields[0]), pid: pid, threads: threads, startedAt: started, lastSeen: seen, jobsDone: done)
            process.inHand = inHand.filter { $0.consumer.hasPrefix(name + "-") }.map(\.job)
            return process
        }.sorted { $0.name < $1.name }
    }

    /// Reserved jobs and who holds them, up to `limit` per stream.
    /// KEYS ready streams. ARGV[1] group, ARGV[2] limit. Returns {consumer, job text, …}.
    private static let jobsInHandScript = RedisScript("""
        local reply = {}
        for _, stream in ipairs(KEYS) do
            local pending = redis.pcall('XPENDING', stream, ARGV[1], '-', '+', tonumber(ARGV[2]))
            if pending.err == nil then
                for _, entry in ipairs(pending) do
                    local found = redis.call('XRANGE', stream, entry[1], entry[1])[1]
                    if found then
                        for i = 1, #found[2], 2 do
                            if found[2][i] == 'j' then reply[#reply + 1] = {entry[2], found[2][i + 1]} end
                        end
                    end
                end
            end
        end
        return reply
        """)

    /// The jobs reserved now, each with its consumer: a few per thread, at most `limit` per stream.
    public func jobsInHand(limit: Int = 5_000) throws(QueueError) -> [(consumer: String, job: Job)] {
        let reply = try connection.evaluate(Self.jobsInHandScript, keys: keys.readyStreams, arguments: [QueueKeys.group, limit])
        guard let rows = reply.array else { throw .unexpectedReply(operation: "jobs in hand", reply: "\(reply)") }
        return rows.compactMap { row in
            guard let parts = row.array, parts.count == 2, let consumer = parts[0].string, let text = parts[1].string,
                let job = try? Job(encoded: text)
            else { return nil }
            return (consumer, job)
        }
    }
}
