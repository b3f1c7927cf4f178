import RedisClient

/// What `reclaim` did.
public struct Reclaimed: Sendable, Hashable {
    /// Jobs now reserved by this consumer: process and settle them like reserved ones.
    public var jobs: [ReservedJob] = []
    /// Entries delivered more than `maxDeliveries` times, moved to the dead letters as "stalled".
    public var buried = 0
    /// Pending entries whose stream entry no longer existed; Redis dropped them from the pending list.
    public var deleted = 0
}

extension JobQueue {
    /// Moves up to `batch` due jobs from the delayed set to their ready streams, earliest due
    /// first, atomically; safe to run in many processes at once. Returns how many moved: call
    /// again while it returns `batch`.
    @discardableResult
    public func promoteDue(batch: Int = 500) throws(QueueError) -> Int {
        guard (1...10_000).contains(batch) else { throw .invalidArgument("promote batch \(batch) is outside 1...10000") }
        let highReasons = Job.Reason.allCases.filter(\.isHighPriority).map(\.rawValue)
        let reply = try connection.evaluate(
            Scripts.promote, keys: [keys.delayed, keys.ready, keys.readyHigh], arguments: [batch] + highReasons)
        guard let moved = reply.int else { throw .unexpectedReply(operation: "promoteDue", reply: "\(reply)") }
        return Int(moved)
    }

    /// Claims for this consumer the jobs reserved more than `visibilityTimeout` ago and never
    /// settled (their worker probably died), following XAUTOCLAIM's cursor through both streams
    /// until it has looked at everything or claimed `limit` entries.
    ///
    /// An entry delivered more than `maxDeliveries` times is not handed out again but moved to
    /// the dead letters (error class "stalled"): a job that kills its worker must not kill the fleet.
    public func reclaim(
        idleLongerThan visibilityTimeout: Duration, maxDeliveries: Int, limit: Int = 100
    ) throws(QueueError) -> Reclaimed {
        guard maxDeliveries >= 1, limit >= 1 else {
            throw .invalidArgument("reclaim needs maxDeliveries ≥ 1 and limit ≥ 1")
        }
        var result = Reclaimed()
        var claimed = 0
        for stream in keys.readyStreams where claimed < limit {
            var cursor = "0-0"
            repeat {
                let step = try reclaimStep(stream, after: visibilityTimeout, cursor: cursor, count: min(limit - claimed, 100))
                cursor = step.cursor
                claimed += step.entries.count
                result.deleted += step.deleted
                for entry in step.entries {
                    if entry.deliveries > maxDeliveries {
                        try buryStalled(entry)
                        result.buried += 1
                    } else {
                        result.jobs += try accept([entry])
                    }
                }
            } while cursor != "0-0" && claimed < limit
        }
        return result
    }

    private func reclaimStep(
        _ stream: String, after minIdle: Duration, cursor: String, count: Int
    ) throws(QueueError) -> (cursor: String, entries: [DeliveredEntry], deleted: Int) {
        let reply = try connection.evaluate(
            Scripts.reclaim, keys: [stream],
            arguments: [QueueKeys.group, consumer, minIdle.wholeMilliseconds, cursor, count])
        guard let parts = reply.array, parts.count == 3, let next = parts[0].string, let items = parts[1].array,
            let deleted = parts[2].int
        else { throw .unexpectedReply(operation: "reclaim", reply: "\(reply)") }
        let entries = try items.map { (item) throws(QueueError) in
            guard let fields = item.array, fields.count == 3, let id = fields[0].string, let deliveries = fields[2].int else {
                throw .unexpectedReply(operation: "reclaim", reply: "\(item)")
            }
            return DeliveredEntry(stream: stream, id: id, fields: fields[1], deliveries: Int(deliveries))
        }
        return (next, entries, Int(deleted))
    }

    private func buryStalled(_ entry: DeliveredEntry) throws(QueueError) {
        let job = entry.jobText.flatMap { try? Job(encoded: $0) }
        let failure = JobFailure(
            errorClass: JobFailure.stalled,
            message: "delivered \(entry.deliveries - 1) times without an ack: the worker probably crashed on it")
        try bury(
            stream: entry.stream, entryID: entry.id, jobText: entry.jobText ?? "", failure: failure,
            attempts: job.map { $0.attempt + 1 } ?? entry.deliveries - 1, firstFailedAt: job?.firstFailedAt)
    }

    /// Records that this consumer is alive (see `QueueStats.liveWorkers`); call it every few
    /// seconds. Consumers silent for an hour are forgotten.
    public func heartbeat() throws(QueueError) {
        try connection.evaluate(Scripts.heartbeat, keys: [keys.workers], arguments: [consumer, 3_600_000])
    }

    /// Removes this consumer from the group on a clean stop. Refuses (returns false) while it
    /// still holds reserved jobs: settle them first, or leave them for `reclaim`.
    public func deregister() throws(QueueError) -> Bool {
        try connection.evaluate(
            Scripts.deregister, keys: [keys.workers] + keys.readyStreams, arguments: [QueueKeys.group, consumer]
        ).int == 1
    }

    /// Removes consumers that hold no jobs and have been idle longer than `idle`: those left by
    /// processes that died or exited without deregistering. Returns how many (per stream) went.
    @discardableResult
    public func removeIdleConsumers(idleLongerThan idle: Duration) throws(QueueError) -> Int {
        let reply = try connection.evaluate(
            Scripts.removeIdleConsumers, keys: keys.readyStreams, arguments: [QueueKeys.group, idle.wholeMilliseconds])
        guard let removed = reply.int else { throw .unexpectedReply(operation: "removeIdleConsumers", reply: "\(reply)") }
        return Int(removed)
    }
}
