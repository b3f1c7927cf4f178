import Foundation
import RedisClient

/// A job in the delayed set: a retry after its backoff, a job postponed by a pause, or a check
/// scheduled for later.
public struct DelayedJob: Sendable, Hashable {
    /// Nil when the member is not a job (`text` holds it).
    public var job: Job?
    public var text: String
    /// When it is due, in ms since the epoch (Redis clock).
    public var dueAt: Int64

    /// One line for a terminal: when it is due, then its subscription, reason and attempt.
    public var line: String {
        let due = Date(timeIntervalSince1970: Double(dueAt) / 1000).formatted(.iso8601)
        return "\(due)  " + (job.map { "subscription \($0.subscriptionID)  \($0.reason)  attempt \($0.attempt)" } ?? text)
    }
}

extension JobQueue {
    /// The delayed jobs due first, from the `offset`-th on: a page of at most `limit`.
    public func delayedJobs(offset: Int = 0, limit: Int = 100) throws(QueueError) -> [DelayedJob] {
        // A caller's offset (a console page's `from`) may be any number: past the end is an empty page, never a trap.
        guard offset >= 0, (1...1_000).contains(limit) else { throw .invalidArgument("a page of delayed jobs is 1...1000 from an offset ≥ 0") }
        guard offset <= Int.max - limit else { return [] }
        let reply = try connection.execute(["ZRANGE", keys.delayed, offset, offset + limit - 1, "WITHSCORES"])
        guard let flat = reply.array, flat.count % 2 == 0 else { throw .unexpectedReply(operation: "delayed jobs", reply: "\(reply)") }
        return stride(from: 0, to: flat.count, by: 2).map { index in
            let text = flat[index].string ?? ""
            return DelayedJob(job: try? Job(encoded: text), text: text, dueAt: flat[index + 1].string.flatMap { Double($0) }.map { Int64($0) } ?? 0)
        }
    }
}
