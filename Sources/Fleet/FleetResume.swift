import JobQueue
import RedisClient

/// What `receiptfleet resume` does: lifts a halt and any pause (the Server API's halt and spent
/// budgets too); when the halt was a
/// configuration error that several subscriptions confirmed (21004, 21000), replays the dead
/// letters of the first receipts that answered it, buried alone before the halt was certain.
/// Returns how many dead letters it replayed.
public func resumeFleet(settings: FleetSettings) throws -> Int {
    let connection = try RedisConnection(settings.redisConfiguration())
    let keys = try QueueKeys(prefix: settings.keyPrefix)
    let reason = try connection.command("GET", keys.halted).string
    try FleetGate(connection: connection, keys: keys, limit: settings.rateLimit).resume(budgets: settings.serverAPIBudgets)
    guard let reason, let code = ["21004", "21000"].first(where: { reason.hasPrefix($0) }) else { return 0 }
    let queue = try JobQueue(connection: connection, keys: keys, consumer: JobQueue.consumerName(thread: -7))
    return try queue.replay(matching: DeadLetterFilter(errorClass: "apple.\(code)"))
}
