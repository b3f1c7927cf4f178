import FleetConfiguration
import Foundation
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

/// Does `action` at once to the waiting jobs of `subscriptions` that `filter` matches (`receiptfleet
/// waiting retry|delete|bury --subscription ID…`), audited; says what it did.
public func actOnWaitingJobs(
    _ action: WaitingJobAction, subscriptions: [Int64], matching filter: WaitingJobFilter = .all, settings: FleetSettings
) throws -> String {
    let queue = try settings.operatorQueue()
    let jobs = try subscriptions.flatMap { try queue.jobs(ofSubscription: $0, limit: 1_000).waiting.compactMap(\.job) }.filter(filter.matches)
    let target = ([filter.isEmpty ? nil : filter.description] + subscriptions.map { "subscription=\($0)" }).compactMap(\.self).joined(separator: " ")
    let acted = try audited("jobs.\(action.rawValue)", target: target, settings: settings, results: { ["acted": "\($0)"] }) {
        try queue.act(action, onWaiting: jobs, by: osUser())
    }
    return "\(acted) of \(jobs.count) waiting jobs \(action.done)."
}

/// Does `action` to every waiting job `filter` matches (`receiptfleet waiting retry|delete|bury
/// --all`), a few hundred per Redis call, audited, once `confirmed`; before that, only says how many it
/// would act on and how to go on.
public func actOnAllWaitingJobs(
    _ action: WaitingJobAction, matching filter: WaitingJobFilter, confirmed: Bool, settings: FleetSettings
) throws -> String {
    let queue = try settings.operatorQueue()
    let matching = filter.isEmpty ? "" : " matching \(filter)"
    guard confirmed else {
        let count = try queue.countWaiting(matching: filter)
        let jobs = count == 1 ? "1 waiting job" : "\(count.formatted()) waiting jobs"
        return count == 0 ? "No waiting job\(matching)." : "\(jobs)\(matching): add --yes to \(action.doing(count == 1 ? "it" : "them"))."
    }
    let target = filter.isEmpty ? "all waiting jobs" : "all waiting jobs \(filter)"
    let acted = try audited("jobs.\(action.rawValue)", target: target, settings: settings, results: { ["acted": "\($0)"] }) {
        try queue.act(action, onWaitingMatching: filter, by: osUser())
    }
    return "\(acted.formatted()) waiting job\(acted == 1 ? "" : "s") \(action.done)" + (filter.isEmpty ? "." : " (all\(matching)).")
}

/// The waiting jobs `filter` matches, at most `limit`, the soonest due first (`receiptfleet waiting
/// list`), one line each, and how many match of all that wait.
public func listWaitingJobs(matching filter: WaitingJobFilter, limit: Int, settings: FleetSettings) throws -> [String] {
    let queue = try settings.operatorQueue()
    guard !filter.isEmpty else {
        let jobs = try queue.delayedJobs(limit: limit)
        return jobs.isEmpty ? ["No job waits for a time."] : jobs.map(\.line)
    }
    let (jobs, complete) = try queue.delayedJobs(matching: filter, limit: limit)
    let none = "No waiting job matching \(filter)\(complete ? "" : " among the \(JobQueue.waitingScanLimit) soonest due")."
    return (jobs.isEmpty ? [none] : jobs.map(\.line))
        + ["\(try queue.countWaiting(matching: filter)) of \(try queue.countWaiting()) waiting jobs match \(filter)."]
}
