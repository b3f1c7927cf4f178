/// One unit of work: re-verify one subscription. It carries ids only, never a receipt or a secret.
///
/// A job has one text form, used everywhere it is stored (stream field `j`, delayed-set member,
/// dead-letter field `job`): `subscription|run|reason|attempt|enqueuedAt|firstFailedAt`, e.g.
/// `4711|2025-06-01|n|0|1748736000000|`. It is short because a night's queue holds millions of them.
/// The Lua scripts build this text for fresh jobs and read the reason from it (see `ScriptPrologue.freshJob`).
public struct Job: Sendable, Hashable {
    /// Why the job exists. The raw values are one letter, to keep queued jobs small.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        case nightly = "n"
        /// A check just after an expected renewal.
        case renewal = "r"
        case notification = "t"
        case registration = "g"
        case manual = "m"
        /// Re-enqueued from the dead-letter stream.
        case replay = "p"

        /// High-priority jobs go to the high ready stream, which workers read first. Priority
        /// follows from the reason (rather than being a separate setting) so that a job keeps
        /// its lane when it comes back from the delayed set after a retry or a pause.
        public var isHighPriority: Bool {
            switch self {
            case .notification, .registration, .manual: true
            case .nightly, .renewal, .replay: false
            }
        }

        /// Whether a job of this reason holds its subscription's bit in the queued bitmap
        /// (`QueueKeys.queued`), so that no sweep enqueues the subscription again while the job
        /// waits, runs or is retried. Sweeps over many subscriptions (the scheduler's nightly and
        /// manual runs) and replays of dead letters are; a job tied to one event or moment (a
        /// notification, a registration, a check after a renewal) is not: it must run even while
        /// a sweep's job of the same subscription waits, and must not clear that job's bit.
        /// Only the bulk enqueue and replay make deduplicated jobs; the single-job paths refuse them.
        public var isDeduplicated: Bool {
            switch self {
            case .nightly, .manual, .replay: true
            case .renewal, .notification, .registration: false
            }
        }
    }

    /// The ledger's id of the subscription: 0...4294967295 (the queued bitmap is indexed by it).
    public var subscriptionID: Int64
    /// The scheduler run (or other source) that enqueued the job; no `|`, at most 64 bytes.
    public var runID: String
    public var reason: Reason
    /// How many times the job has failed and been retried so far (0 for a fresh job).
    public var attempt: Int
    /// When the job was first enqueued, in ms since the epoch (Redis clock).
    public var enqueuedAt: Int64
    /// When the job first failed, in ms since the epoch (Redis clock); nil if it never failed.
    public var firstFailedAt: Int64?

    public init(
        subscriptionID: Int64, runID: String, reason: Reason,
        attempt: Int = 0, enqueuedAt: Int64, firstFailedAt: Int64? = nil
    ) {
        self.subscriptionID = subscriptionID
        self.runID = runID
        self.reason = reason
        self.attempt = attempt
        self.enqueuedAt = enqueuedAt
        self.firstFailedAt = firstFailedAt
    }

    /// The job's one text form.
    public var encoded: String {
        "\(subscriptionID)|\(runID)|\(reason.rawValue)|\(attempt)|\(enqueuedAt)|\(firstFailedAt.map(String.init) ?? "")"
    }

    /// The scripts' argument for the queued bit this job holds: its subscription id if its reason
    /// is deduplicated, else "" (the job must leave the bit of a sweep's job alone).
    var heldQueuedBit: String { reason.isDeduplicated ? String(subscriptionID) : "" }

    /// The run whose tally (`QueueKeys.run`) counts this job when it is verified or dies: a sweep's
    /// jobs count in their run, a job for one event in none.
    var tallyingRun: String? { reason.isDeduplicated ? runID : nil }

    /// Reads a job's text form; anything else throws `QueueError.undecodableJob` saying what is wrong.
    public init(encoded text: String) throws(QueueError) {
        let fields = text.split(separator: "|", omittingEmptySubsequences: false)
        guard fields.count == 6 else {
            throw .undecodableJob("expected 6 fields separated by '|', found \(fields.count)")
        }
        guard let subscriptionID = Int64(fields[0]), Self.subscriptionIDs.contains(subscriptionID) else {
            throw .undecodableJob("the subscription id is not a number in \(Self.subscriptionIDs)")
        }
        let runID = String(fields[1])
        guard let reason = Reason(rawValue: String(fields[2])) else {
            throw .undecodableJob("unknown reason code '\(fields[2].prefix(8))'")
        }
        guard let attempt = Int(fields[3]), attempt >= 0 else {
            throw .undecodableJob("the attempt is not a non-negative number")
        }
        guard let enqueuedAt = Int64(fields[4]), enqueuedAt >= 0 else {
            throw .undecodableJob("the enqueue time is not a non-negative number")
        }
        let firstFailedAt = Int64(fields[5])
        guard fields[5].isEmpty || firstFailedAt != nil else {
            throw .undecodableJob("the first failure time is neither empty nor a number")
        }
        guard Self.isValid(runID: runID) else {
            throw .undecodableJob("the run id is empty, longer than 64 bytes or contains '|'")
        }
        self.init(
            subscriptionID: subscriptionID, runID: runID, reason: reason,
            attempt: attempt, enqueuedAt: enqueuedAt, firstFailedAt: firstFailedAt)
    }

    /// Subscription ids the queue accepts: the ledger's dense ids, which index the queued bitmap.
    public static let subscriptionIDs: ClosedRange<Int64> = 0...Int64(UInt32.max)

    static func validate(subscriptionID: Int64) throws(QueueError) {
        guard subscriptionIDs.contains(subscriptionID) else {
            throw .invalidArgument(
                "subscription id \(subscriptionID) is outside \(subscriptionIDs): the queue indexes a bitmap "
                    + "by the ledger's dense ids; pass the ledger's id, not an Apple transaction id")
        }
    }

    static func validate(runID: String) throws(QueueError) {
        guard isValid(runID: runID) else {
            throw .invalidArgument("a run id must be 1 to 64 bytes without '|', e.g. \"2025-06-01\"")
        }
    }

    private static func isValid(runID: String) -> Bool {
        !runID.isEmpty && runID.utf8.count <= 64 && !runID.contains("|")
    }
}

extension Job.Reason {
    /// The reason its name gives ("nightly", "notification", …), as people type it.
    public init?(name: String) {
        guard let reason = Self.allCases.first(where: { "\($0)" == name }) else { return nil }
        self = reason
    }
}
