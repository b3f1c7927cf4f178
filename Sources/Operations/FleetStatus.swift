import Fleet
import FleetConfiguration
import Foundation
import JobQueue

/// Everything `receiptfleet status`, the metrics' fleet-wide gauges and the ops console show, read
/// from Redis and PostgreSQL themselves by one function (`FleetStatusReader.read`), so that every
/// process and every page that asks sees the same truth.
public struct FleetStatus: Sendable, Encodable {
    public var queue: Queue
    /// The limiter's configured rate and the tokens it has ever granted (a counter: its rate is the
    /// verifyReceipt requests per second the whole fleet makes).
    public var rateLimit: RateLimitReading
    public var serverAPI: ServerAPIGate
    /// The last scheduler pass (`ScheduleSummary.passID`: a pass of its night).
    public var lastSchedulerRun: ScheduleSummary?
    /// How far the last pass's jobs have come: verified, dead, still to go (nil once its tally expired).
    public var lastRunTally: RunTally?
    /// Verifications in the last minute, and the Apple status mix among them.
    public var verifiedLastMinute: Int
    public var appleStatusLastMinute: [String: Int]
    /// The fleet split by app: each configured app (and any other the ledger holds), by name.
    public var apps: [AppStatus]
    public var outbox: Outbox
    /// Whole-table counts, read only for a full reading (`FleetStatusReader.Scope.full`).
    public var subscriptions: [String: Int]?
    public var dueNow: Int?
    public var eventsLastHour: [String: Int]?
    /// The last `notifications recover` (dry runs are not recorded), from the audit trail: when it
    /// ran and what it found; nil when none ran.
    public var lastNotificationRecovery: NotificationRecovery?

    public struct NotificationRecovery: Sendable, Encodable {
        public var at: Date
        /// Notifications in Apple's history for its window, and those the ledger did not hold.
        public var found: Int
        public var new: Int
        /// "ok", or "failed: …".
        public var outcome: String
    }

    /// A worker process that has not reported for `Heartbeat.silentAfter` or more, within the last
    /// 10 minutes, without saying goodbye: stopped (SIGSTOP, a frozen container), cut off from
    /// Redis, or dead. The jobs it holds go to other workers once their leases run out.
    public struct SilentWorker: Sendable, Encodable {
        public var process: String
        public var silentSeconds: Int64
        public var jobsHeld: Int
        /// Seconds until the last of its jobs' leases runs out (0: they are being taken); nil when it holds none.
        public var leasesEndInSeconds: Int64?
        /// The same for people: "12 jobs, whose leases run out within 18 s, then other workers take them".
        public var held: String

        /// `process` as Redis knows it, whose jobs' leases last `visibilityTimeout` from their last renewal.
        public init(_ process: WorkerProcess, visibilityTimeout: Duration) {
            self.process = process.name
            silentSeconds = process.silentFor.components.seconds
            jobsHeld = process.inHand.count
            let leasesEnd = process.inHand.map { max(.zero, visibilityTimeout - $0.idle) }.max().map { Int64($0.seconds.rounded(.up)) }
            leasesEndInSeconds = leasesEnd
            let jobs = jobsHeld == 1 ? "1 job, whose lease runs" : "\(jobsHeld) jobs, whose leases run"
            held = switch leasesEnd {
            case nil: "no job"
            case 0: "\(jobs) out now: other workers are taking them"
            case let seconds?: "\(jobs) out within \(seconds) s, then other workers take them"
            }
        }
    }

    /// The queue: its job counts and the rest of its state, both read as its own (`queue.ready`,
    /// `queue.liveWorkers`) and written as one JSON object.
    @dynamicMemberLookup
    public struct Queue: Sendable, Encodable {
        public var jobs: JobCounts
        public var state: State

        public struct State: Sendable, Encodable {
            public var oldestJobAgeSeconds: Double?
            public var liveWorkers: Int
            public var consumers: Int
            /// Worker processes that gave up rate-limit slots in the last 5 minutes while they still
            /// report: starved of CPU.
            public var starvedWorkers: [StarvedWorker]
            /// Worker processes whose heartbeat is late: stopped, cut off from Redis, or dead.
            public var silentWorkers: [SilentWorker]
            public var pausedUntil: Date?
            public var haltedReason: String?
            /// Jobs settled ever, fleet-wide (counters): acked, retried, buried.
            public var jobsDone: Int64
            public var jobsRetried: Int64
            public var jobsDied: Int64
        }

        public subscript(dynamicMember count: KeyPath<JobCounts, Int>) -> Int { jobs[keyPath: count] }
        public subscript<Value>(dynamicMember field: KeyPath<State, Value>) -> Value { state[keyPath: field] }

        /// The counts beside the rest, as `status --json` writes the queue.
        public func encode(to encoder: any Encoder) throws {
            try jobs.encode(to: encoder)
            try state.encode(to: encoder)
        }
    }

    /// One app's part: its halt (its shared secret was refused), its verifications in the last
    /// minute and, in a full reading, its subscriptions by status.
    public struct AppStatus: Sendable, Encodable {
        public var name: String
        public var haltedReason: String?
        public var verifiedLastMinute: Int
        public var subscriptions: [String: Int]?
        /// Notification-first or nightly, and why (`NotificationHealth`); nil before the first pass
        /// that judged it, or when every active subscription is checked nightly (`audit-days` 0).
        public var schedule: NotificationHealth?
    }

    public struct RateLimitReading: Sendable, Encodable {
        public var perSecond: Double
        public var tokensGranted: Int64
    }

    /// The App Store Server API's part of the gate: its own halt, and its endpoints' budgets that
    /// Apple's 429 spent, with the seconds left.
    public struct ServerAPIGate: Sendable, Encodable {
        public var haltedReason: String?
        public var throttledSeconds: [String: Double]
    }

    public struct Outbox: Sendable, Encodable {
        public var unpublished: Int
        public var oldestUnpublishedAgeSeconds: Double?
    }

    /// Reads the whole status now, on connections of its own (for commands that ask once).
    public static func read(settings: FleetSettings) throws -> FleetStatus {
        try FleetStatusReader(settings: settings, clock: settings.processClock()).read(.full).status()
    }
}
