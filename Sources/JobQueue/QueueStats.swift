import RedisClient

/// Where the queue's jobs are, by count: what `QueueStats` reads and `status` shows.
public struct JobCounts: Sendable, Hashable, Encodable {
    /// Jobs waiting to be reserved, both streams together.
    public var ready: Int
    /// Of which in the high-priority stream.
    public var readyHigh: Int
    /// Jobs reserved by a consumer and not yet settled.
    public var reserved: Int
    /// Delayed jobs already due (waiting for `promoteDue`), and due later.
    public var delayedDue: Int
    public var delayedLater: Int
    public var dead: Int

    /// Jobs not yet settled: waiting, running or delayed (dead letters aside).
    public var outstanding: Int { ready + reserved + delayedDue + delayedLater }
}

/// The state of the queue, read from Redis in one round trip (one script, so at one instant).
/// Its job counts read as its own (`stats.ready`).
@dynamicMemberLookup
public struct QueueStats: Sendable, Hashable {
    /// One member of the consumer group.
    public struct Consumer: Sendable, Hashable {
        public var name: String
        /// Jobs it holds reserved, both streams together.
        public var reserved: Int
        /// Time since it last read or claimed anything.
        public var idle: Duration
    }

    public var jobs: JobCounts
    public subscript(dynamicMember count: KeyPath<JobCounts, Int>) -> Int { jobs[keyPath: count] }

    /// How long ago the oldest job in the queue (ready, reserved or delayed) was first enqueued,
    /// to the second: retries and pauses do not restart it. Nil when the queue holds no job that is due.
    public var oldestJobAge: Duration?
    public var consumers: [Consumer]
    /// Consumers that sent a heartbeat within the window asked for.
    public var liveWorkers: Int
    /// Set while the fleet is paused: until when, in ms since the epoch (Redis clock). A time in
    /// the past means the pause is over and a probe decides whether it ends.
    public var pausedUntil: Int64?
    /// Set while the fleet is halted.
    public var haltedReason: String?
    /// Tokens the rate limiter has ever granted (a counter: graph its rate).
    public var limiterGranted: Int64
    /// Jobs settled ever, fleet-wide (counters: graph their rates): acked, retried, buried.
    public var jobsDone: Int64
    public var jobsRetried: Int64
    public var jobsDied: Int64
}

extension JobQueue {
    /// Everything `QueueStats` shows, read at one instant.
    /// KEYS[1] high ready stream, KEYS[2] ready stream, KEYS[3] delayed, KEYS[4] dead, KEYS[5] workers,
    /// KEYS[6] paused, KEYS[7] halted, KEYS[8] granted counter, KEYS[9] queued seconds, KEYS[10]
    /// settled counts. ARGV[1] group, ARGV[2] live window ms.
    /// Returns {lane, lane, due, later, dead, live workers, paused until | nil, halted reason | nil,
    /// granted | nil, age in ms of the oldest job's second of first enqueue (-1: none), {done, retried,
    /// dead} (each nil if none yet)}; a lane is
    /// {length, reserved, {{consumer, reserved, idle ms}, …}}. A job scheduled for later (its enqueue
    /// time is when it is due) counts only once that time has come.
    private static let statsScript = ClockedScript(ScriptPrologue.asMap + ScriptPrologue.oldestQueued + """
        local function lane(stream)
            local length, reserved, consumers = redis.call('XLEN', stream), 0, {}
            local groups = redis.pcall('XINFO', 'GROUPS', stream)
            for _, flat in ipairs(groups.err == nil and groups or {}) do
                local group = asMap(flat)
                if group.name == ARGV[1] then
                    reserved = group.pending
                    for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, ARGV[1])) do
                        local consumer = asMap(c)
                        consumers[#consumers + 1] = {consumer.name, consumer.pending, consumer.idle}
                    end
                end
            end
            return {length, reserved, consumers}
        end
        return {lane(KEYS[1]), lane(KEYS[2]),
            redis.call('ZCOUNT', KEYS[3], '-inf', now), redis.call('ZCOUNT', KEYS[3], '(' .. nowText, '+inf'),
            redis.call('XLEN', KEYS[4]), redis.call('ZCOUNT', KEYS[5], now - tonumber(ARGV[2]), '+inf'),
            redis.call('GET', KEYS[6]), redis.call('GET', KEYS[7]), redis.call('GET', KEYS[8]),
            oldestQueuedAge(KEYS[9]), redis.call('HMGET', KEYS[10], 'done', 'retried', 'dead')}
        """)

    /// Reads the queue's state; workers that sent a heartbeat within `liveWithin` count as live.
    public func stats(liveWithin: Duration = .seconds(30)) throws(QueueError) -> QueueStats {
        let reply = try evaluate(
            Self.statsScript,
            keys: keys.readyStreams + [keys.delayed, keys.dead, keys.workers, keys.paused, keys.halted, keys.limiterGranted,
                                           keys.queuedSeconds, keys.settledCounts],
            arguments: [QueueKeys.group, liveWithin.wholeMilliseconds])
        let unexpected = QueueError.unexpectedReply(operation: "stats", reply: "\(reply)")
        guard let parts = reply.array, parts.count == 11,
            let high = Lane(parts[0]), let normal = Lane(parts[1]),
            let due = parts[2].int, let later = parts[3].int, let dead = parts[4].int, let live = parts[5].int,
            let oldest = parts[9].int, let settled = parts[10].array, settled.count == 3
        else { throw unexpected }

        var consumers: [String: QueueStats.Consumer] = [:]
        for consumer in high.consumers + normal.consumers {
            consumers[consumer.name, default: QueueStats.Consumer(name: consumer.name, reserved: 0, idle: consumer.idle)]
                .merge(consumer)
        }
        return QueueStats(
            jobs: JobCounts(
                ready: high.waiting + normal.waiting, readyHigh: high.waiting, reserved: high.reserved + normal.reserved,
                delayedDue: Int(due), delayedLater: Int(later), dead: Int(dead)),
            oldestJobAge: oldest < 0 ? nil : .milliseconds(oldest),
            consumers: consumers.values.sorted { $0.name < $1.name },
            liveWorkers: Int(live),
            pausedUntil: parts[6].int,
            haltedReason: parts[7].string,
            limiterGranted: parts[8].int ?? 0,
            jobsDone: settled[0].int ?? 0, jobsRetried: settled[1].int ?? 0, jobsDied: settled[2].int ?? 0)
    }
}

extension QueueStats.Consumer {
    fileprivate mutating func merge(_ other: Self) {
        reserved += other.reserved
        idle = min(idle, other.idle)
    }
}

/// One ready stream's part of the stats script's reply.
private struct Lane {
    var waiting: Int
    var reserved: Int
    var consumers: [QueueStats.Consumer]

    init?(_ value: RedisValue) {
        guard let parts = value.array, parts.count == 3, let length = parts[0].int, let reserved = parts[1].int,
            let consumers = parts[2].array
        else { return nil }
        // Acked entries are deleted, so a stream holds exactly its reserved and its waiting jobs.
        waiting = Int(length - reserved)
        self.reserved = Int(reserved)
        self.consumers = consumers.compactMap { consumer in
            guard let fields = consumer.array, fields.count == 3, let name = fields[0].string,
                let reserved = fields[1].int, let idle = fields[2].int
            else { return nil }
            return QueueStats.Consumer(name: name, reserved: Int(reserved), idle: .milliseconds(idle))
        }
    }
}
