/// The Redis keys of one deployment's queue.
///
/// Every key starts with the prefix, and the prefix holds a `{…}` hash tag, so Redis Cluster puts
/// all of them in one slot: the Lua scripts, which touch several keys at once, run unchanged there.
public struct QueueKeys: Sendable, Hashable {
    /// The consumer group every worker reads the ready streams through.
    public static let group = "workers"

    /// For example "{rf}" (the default) or "{rf-staging}:queue".
    public let prefix: String

    /// Accepts a prefix with a non-empty hash tag (`{` then `}` with something in between), as
    /// Redis Cluster requires for keys that must share a slot.
    public init(prefix: String = "{rf}") throws(QueueError) {
        guard let open = prefix.firstIndex(of: "{"),
            let close = prefix[open...].firstIndex(of: "}"),
            prefix.index(after: open) < close
        else {
            throw .invalidArgument(
                "the key prefix '\(prefix)' has no {hash tag}: every key of a deployment must share one "
                    + "Redis Cluster hash tag, e.g. \"{rf}\" or \"{rf-staging}\"")
        }
        self.prefix = prefix
    }

    /// The ready stream for ordinary jobs (consumer group `workers`).
    public var ready: String { "\(prefix):jobs" }
    /// The ready stream for high-priority jobs; reserve reads it first.
    public var readyHigh: String { "\(prefix):jobs:high" }
    /// Both ready streams, high priority first.
    var readyStreams: [String] { [readyHigh, ready] }
    /// Jobs waiting for a time (retries, postponed and scheduled jobs): a sorted set by due time in ms.
    public var delayed: String { "\(prefix):delayed" }
    /// Jobs that will not be retried, with their error: a stream.
    public var dead: String { "\(prefix):dead" }
    /// The subscriptions with a deduplicated job in the queue (ready, reserved or delayed): a bitmap
    /// indexed by subscription id, one for the whole deployment, so no pass of any run enqueues a
    /// subscription twice. Its size follows the highest id (10M ids: 1.25 MB), not the passes.
    public var queued: String { "\(prefix):queued" }
    /// Jobs in the queue (ready, reserved or delayed) by the second they were first enqueued: a hash
    /// second → count, so the oldest job's age survives retries and pauses (`ScriptPrologue.countQueued`).
    /// It holds one field per second that still has a job, not one per job.
    public var queuedPerSecond: String { "\(prefix):queued-per-second" }
    /// The seconds `queuedPerSecond` holds, each scored by its start in ms: a sorted set, so the oldest
    /// job's second is found in O(log n), however many seconds a long outage leaves queued.
    public var queuedSeconds: String { "\(prefix):queued-seconds" }
    /// Both, as the scripts that count the queued jobs take them.
    var queuedSince: [String] { [queuedPerSecond, queuedSeconds] }
    /// A sweep's run, a scheduler pass (its deduplicated jobs: nightly, manual and their replays): a
    /// hash of the jobs it `enqueued`, how many were `verified` (acked: their result is durable) or
    /// went `dead`, how many dead letters were `replayed` into it, and when a job was `last` settled.
    /// Made by the enqueue that starts it; it expires `JobQueue.runMemory` after its last enqueue.
    public func run(_ runID: String) -> String { "\(prefix):run:\(runID)" }
    /// Marks that the job for one occurrence (e.g. "notification-42") was enqueued: a string with
    /// an expiry, so enqueueing it again adds nothing.
    public func once(_ occurrence: String) -> String { "\(prefix):once:\(occurrence)" }
    /// A lock held by one process at a time, e.g. "scheduler": a string with the holder's token.
    public func lock(_ name: String) -> String { "\(prefix):lock:\(name)" }
    /// The summary of the last finished scheduler run (JSON), for `receiptfleet status`.
    public var schedulerLastRun: String { "\(prefix):scheduler:last-run" }
    /// Each app's notification health as the last scheduler pass judged it (JSON).
    public var notificationHealth: String { "\(prefix):scheduler:notification-health" }
    /// The rate limiter's state (GCRA theoretical arrival time, µs).
    public var limiter: String { "\(prefix):limiter" }
    /// The number of tokens the limiter has granted, ever: a counter for rate graphs.
    public var limiterGranted: String { "\(prefix):stats:granted" }
    /// Jobs settled, ever, fleet-wide: a hash of counters `done` (acked), `retried` and `dead`, for
    /// the console's history (graph their rates).
    public var settledCounts: String { "\(prefix):stats:settled" }
    /// The number of times workers and the API asked the gate for admission, ever: what the rate
    /// limit costs Redis, against `limiterGranted`.
    public var gateAdmissions: String { "\(prefix):stats:admissions" }
    /// One API client's limiter state (GCRA theoretical arrival time, µs), shared by every `serve`
    /// replica; `client` is "token:<name>" or "address:<ip>". Expires when the client is idle.
    public func clientLimiter(_ client: String) -> String { "\(prefix):api:limit:\(client)" }
    /// The number of API requests the client limiter has admitted, ever: a counter.
    public var clientLimiterAdmitted: String { "\(prefix):stats:api-admitted" }
    /// Set while the fleet is paused: the time (ms, Redis clock) until which nobody calls Apple.
    public var paused: String { "\(prefix):paused" }
    /// Consecutive periods of unavailability; each pause is longer than the last.
    public var pauseFailures: String { "\(prefix):pause:failures" }
    /// Unavailable answers in a row, fleet-wide, with no answer from Apple in between.
    public var unavailableStreak: String { "\(prefix):pause:streak" }
    /// The subscriptions that answered a configuration error (21004, 21000) in a row, fleet-wide:
    /// a set; enough different ones halt the fleet.
    public var configurationStreak: String { "\(prefix):halt:streak" }
    /// The same streak for one app's receipts (21004: that app's shared secret is wrong).
    public func configurationStreak(app: String) -> String { "\(prefix):halt:streak:app:\(app)" }
    /// Since when (ms, Redis clock) every call to Apple has failed in a way that is usually passing
    /// but a misconfiguration when it never stops (a broken TLS handshake, say); gone once any
    /// call ends otherwise. Long enough, it halts the fleet.
    public var recurringFailure: String { "\(prefix):halt:recurring" }
    /// Held by the one worker allowed to test whether Apple is back.
    public var probe: String { "\(prefix):probe" }
    /// Set while the fleet is halted; the value is the reason.
    public var halted: String { "\(prefix):halted" }
    /// Set while one part of the fleet (a `GateBudget.group`: the Server API) is halted; the value is the reason.
    public func halted(_ group: String) -> String { "\(prefix):halted:\(group)" }
    /// Set while one app is halted (its shared secret is wrong); the value is the reason.
    public func halted(app: String) -> String { "\(prefix):halted:app:\(app)" }
    /// When the halt kept in the key `halt` (any of the three above) began, in ms (Redis clock).
    public func since(_ halt: String) -> String { "\(halt):since" }
    /// A rate limit of Apple's besides the fleet's first (a `GateBudget`): its limiter state, its
    /// counter of granted calls, and, while Apple said it is spent (429), a key that expires when
    /// Apple said to come back.
    public func limiter(_ budget: String) -> String { "\(prefix):limiter:\(budget)" }
    public func limiterGranted(_ budget: String) -> String { "\(prefix):stats:granted:\(budget)" }
    public func throttled(_ budget: String) -> String { "\(prefix):throttled:\(budget)" }
    /// The fleet's timings of one minute or hour (`FleetTimings`), `start` its first ms by the
    /// processes' clocks: a hash of bucket counts by series.
    public func timings(_ span: FleetTimings.Span, at start: Int64) -> String { "\(prefix):timings:\(span.rawValue):\(start)" }
    /// Consumer name → last heartbeat (ms, Redis clock): a sorted set.
    public var workers: String { "\(prefix):workers" }
    /// Worker process → when it last gave up a rate-limit slot (ms, Redis clock): a sorted set; and
    /// worker process → slots it gave up since it started: a hash (`JobQueue.reportSlotsGivenUp`).
    public var starvedWorkers: String { "\(prefix):starved-workers" }
    /// Worker process → its last report (ms, Redis clock): a sorted set; and worker process → what
    /// it reported (`WorkerProcess`): a hash (`JobQueue.reportProcess`).
    public var processes: String { "\(prefix):processes" }
    public var processReports: String { "\(prefix):process-reports" }
    public var slotsGivenUp: String { "\(prefix):slots-given-up" }
    /// The time, in µs since the epoch, that handles made with `ScriptClock.driven` read instead of
    /// Redis's clock: tests set it and add to it. Production never reads or writes it.
    public var drivenClock: String { "\(prefix):driven-clock" }
    /// The shift, in µs, that handles made with `ScriptClock.shifted` add to Redis's clock: a drill
    /// or a benchmark moves it forward to stand on a later day. Production never reads or writes it.
    public var timeShift: String { "\(prefix):time-shift" }
}
