import RedisClient

/// What the queue holds for one subscription, for the console's subscription page: whether a job of
/// a sweep or a replay is queued for it, the jobs waiting for a time, those a worker holds, and its
/// dead letters.
public struct SubscriptionJobs: Sendable {
    /// The bit a sweep's enqueue reads: a job of a sweep or a replay is ready, in hand or waiting.
    public var queued: Bool
    public var waiting: [DelayedJob]
    /// False when the delayed set was too large to look through whole (`JobQueue.waitingScanLimit`).
    public var waitingComplete: Bool
    public var inHand: [(consumer: String, job: Job)]
    public var dead: [DeadLetter]
}

extension JobQueue {
    /// The most members of the delayed set a subscription's page looks through: after a pause of a
    /// large fleet it holds every postponed job, and a page must answer within its deadline.
    public static let waitingScanLimit = 200_000

    /// The jobs of `subscriptionID` (at most `limit` of each kind) the queue holds now.
    public func jobs(ofSubscription subscriptionID: Int64, limit: Int = 20) throws(QueueError) -> SubscriptionJobs {
        try Job.validate(subscriptionID: subscriptionID)
        let queued = try connection.execute(["GETBIT", keys.queued, subscriptionID]).int == 1
        var (waiting, cursor, looked) = ([DelayedJob](), "0", 0)
        repeat {
            let reply = try connection.execute(["ZSCAN", keys.delayed, cursor, "MATCH", "\(subscriptionID)|*", "COUNT", 1_000])
            guard let parts = reply.array, parts.count == 2, let next = parts[0].string, let flat = parts[1].array else {
                throw .unexpectedReply(operation: "a subscription's waiting jobs", reply: "\(reply)")
            }
            for index in stride(from: 0, to: flat.count - 1, by: 2) where waiting.count < limit {
                let text = flat[index].string ?? ""
                let due = flat[index + 1].string.flatMap { Double($0) }.map { Int64($0) } ?? 0
                waiting.append(DelayedJob(job: try? Job(encoded: text), text: text, dueAt: due))
            }
            (cursor, looked) = (next, looked + 1_000)
        } while cursor != "0" && looked < Self.waitingScanLimit
        let inHand = try jobsInHand().filter { $0.job.subscriptionID == subscriptionID }.prefix(limit).map { ($0.consumer, $0.job) }
        let dead = try deadLetters(matching: DeadLetterFilter(subscriptionIDs: [subscriptionID]), limit: limit)
        return SubscriptionJobs(
            queued: queued, waiting: waiting.sorted { $0.dueAt < $1.dueAt }, waitingComplete: cursor == "0", inHand: Array(inHand),
            dead: dead)
    }
}
