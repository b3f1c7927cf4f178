import FleetConfiguration
import JobQueue
import RedisClient

/// What `receiptfleet resume` does: lifts a halt and any pause (the Server API's halt and spent
/// budgets, and every app's halt, too), or with `app` that app's halt alone; when the halt was a
/// configuration error that several subscriptions confirmed (21004, 21000), replays the dead
/// letters of the first receipts that answered it, buried alone before the halt was certain.
/// Returns how many dead letters it replayed.
public func resumeFleet(settings: FleetSettings, app: String? = nil) throws -> Int {
    let connection = try RedisConnection(settings.redisConfiguration())
    let keys = try QueueKeys(prefix: settings.keyPrefix)
    let gate = FleetGate(connection: connection, keys: keys, limit: settings.rateLimit, clock: settings.scriptClock)
    let reasons: [String]
    if let app {
        reasons = [try gate.haltedReason(app: app)].compactMap(\.self)
        try gate.resume(app: app)
    } else {
        reasons = try ([gate.haltedReason()] + settings.apps.names.map(gate.haltedReason(app:))).compactMap(\.self)
        try gate.resume(budgets: settings.serverAPIBudgets, apps: settings.apps.names)
    }
    let codes = ["21004", "21000"].filter { code in reasons.contains { $0.hasPrefix(code) } }
    let queue = try JobQueue(connection: connection, keys: keys, consumer: JobQueue.consumerName(thread: -7), clock: settings.scriptClock)
    return try codes.reduce(0) { replayed, code in
        replayed + (try queue.replay(matching: DeadLetterFilter(errorClass: "apple.\(code)")))
    }
}
