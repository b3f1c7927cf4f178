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
        let moved = try moveToDelayed(reserved, as: next, after: delay, stampFirstFailure: true)
        return moved ? .delayed(delay) : .notReserved
    }

    /// Moves a job back to the delayed set without charging an attempt: for jobs that could not
    /// run because the fleet is paused or halted. Returns false if it is no longer reserved by
    /// this consumer.
    @discardableResult
    public func postpone(_ reserved: ReservedJob, for delay: Duration) throws(QueueError) -> Bool {
        try moveToDelayed(reserved, as: reserved.job, after: delay, stampFirstFailure: false)
    }

    /// Moves a job to the dead letters at once, for failures no retry can fix; a sweep may
    /// enqueue its subscription again. Returns false if it is no longer reserved by this consumer.
    @discardableResult
    public func bury(_ reserved: ReservedJob, failure: JobFailure) throws(QueueError) -> Bool {
        try bury(
            stream: reserved.stream, entryID: reserved.entryID, jobText: reserved.job.encoded, failure: failure,
            attempts: reserved.job.attempt + 1, firstFailedAt: reserved.job.firstFailedAt)
    }

    @discardableResult
    func bury(
        stream: String, entryID: String, jobText: String, failure: JobFailure, attempts: Int, firstFailedAt: Int64?
    ) throws(QueueError) -> Bool {
        let reply = try connection.evaluate(
            Scripts.bury, keys: [stream, keys.dead, keys.queued],
            arguments: [
                QueueKeys.group, consumer, entryID, String(jobText.prefix(500)), failure.errorClass, failure.message,
                attempts, firstFailedAt.map(String.init) ?? "", (try? Job(encoded: jobText))?.heldQueuedBit ?? "",
            ])
        return reply.int == 1
    }

    private func moveToDelayed(
        _ reserved: ReservedJob, as job: Job, after delay: Duration, stampFirstFailure: Bool
    ) throws(QueueError) -> Bool {
        guard delay >= .zero else { throw .invalidArgument("a delay cannot be negative (\(delay))") }
        let reply = try connection.evaluate(
            Scripts.delay, keys: [reserved.stream, keys.delayed],
            arguments: [
                QueueKeys.group, consumer, reserved.entryID, delay.wholeMilliseconds, job.encoded,
                stampFirstFailure ? "stamp" : "",
            ])
        return reply.int == 1
    }
}
