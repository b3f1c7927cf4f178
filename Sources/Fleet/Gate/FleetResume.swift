import FleetConfiguration
import JobQueue
import RedisClient
import VerificationUseCase

/// What `resumeFleet` did.
public struct Resumed: Sendable {
    /// Dead letters of receipts that answered the halt's configuration error alone before it, replayed.
    public var replayed: Int
    /// Waiting jobs made due now: those the halt postponed, which would otherwise wait out its wait.
    public var broughtForward: Int

    /// For the audit trail.
    public var results: [String: String] { ["replayed": "\(replayed)", "brought_forward": "\(broughtForward)"] }
}

/// What `receiptfleet resume` does: lifts a halt and any pause (the Server API's halt and spent
/// budgets, and every app's halt, too), or with `app` that app's halt alone; makes due now the
/// jobs the halt postponed (by `Refusal.haltedWait` each); when the halt was a configuration error
/// that several subscriptions confirmed (21004, 21000), replays the dead letters of the first
/// receipts that answered it, buried alone before the halt was certain.
public func resumeFleet(settings: FleetSettings, app: String? = nil) throws -> Resumed {
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
    let queue = try JobQueue(connection: connection, keys: keys, consumer: JobQueue.consumerName(thread: -7), clock: settings.scriptClock)
    // The queue does not know which app a job is for: an app's resume brings every such job forward,
    // a wait early at most; the gate still admits each, and holds back those another halt covers.
    let broughtForward = try queue.bringForward(dueWithin: Refusal.haltedWait)
    let codes = ["21004", "21000"].filter { code in reasons.contains { $0.hasPrefix(code) } }
    let replayed = try codes.reduce(0) { replayed, code in
        replayed + (try queue.replay(matching: DeadLetterFilter(errorClass: "apple.\(code)")))
    }
    return Resumed(replayed: replayed, broughtForward: broughtForward)
}
