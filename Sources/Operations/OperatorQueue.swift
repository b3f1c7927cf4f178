import FleetConfiguration
import JobQueue
import RedisClient

extension FleetSettings {
    /// The queue as an operator's command reads and changes it (`dead`, `waiting`): a consumer name
    /// of its own, which never reserves a job.
    public func operatorQueue() throws -> JobQueue {
        try JobQueue(
            connection: RedisConnection(redisConfiguration()), keys: QueueKeys(prefix: keyPrefix),
            consumer: JobQueue.consumerName(thread: -4), clock: scriptClock)
    }
}

/// Does `action` to the waiting jobs of `subscriptions`, or to the first 1,000 of all when none is
/// named (`receiptfleet waiting retry|delete|bury`), audited; says what it did.
public func actOnWaitingJobs(_ action: WaitingJobAction, subscriptions: [Int64], settings: FleetSettings) throws -> String {
    let queue = try settings.operatorQueue()
    let jobs = try subscriptions.isEmpty ? queue.delayedJobs(limit: 1_000).compactMap(\.job)
        : subscriptions.flatMap { try queue.jobs(ofSubscription: $0, limit: 1_000).waiting.compactMap(\.job) }
    let target = subscriptions.isEmpty ? "all waiting jobs" : subscriptions.map { "subscription=\($0)" }.joined(separator: " ")
    let acted = try audited("jobs.\(action.rawValue)", target: target, settings: settings, results: { ["acted": "\($0)"] }) {
        try queue.act(action, onWaiting: jobs, by: osUser())
    }
    let more = subscriptions.isEmpty && jobs.count == 1_000 ? "; run it again for the next 1,000" : ""
    return "\(acted) of \(jobs.count) waiting jobs \(action.done)\(more)."
}
