import AppStore
import FleetConfiguration
import JobQueue
import RedisClient

/// Which of the gate's budgets and halts each of Apple's endpoints answers to. verifyReceipt is the
/// fleet's first budget (`rateLimit`), and its configuration errors halt the whole fleet, as they
/// always did. Each App Store Server API endpoint has a budget of its own, spent alone by Apple's
/// 429; the Server API's configuration errors (a refused key, no key) halt its endpoints only.
extension FleetSettings {
    public static let serverAPIGroup = "server_api"

    /// `endpoint`'s budget: nil for verifyReceipt (the gate's own).
    public func budget(for endpoint: AppleEndpoint) -> GateBudget? {
        guard endpoint.backend == .serverAPI else { return nil }
        return GateBudget(name: endpoint.rawValue, group: Self.serverAPIGroup, limit: serverAPI?.rateLimit ?? rateLimit)
    }

    /// The Server API's budgets, for `resume` and `status`.
    public var serverAPIBudgets: [GateBudget] { AppleEndpoint.allCases.compactMap(budget(for:)) }

    /// What a configuration error of `backend` halts: nil for the whole fleet.
    public func haltGroup(for backend: VerificationBackend) -> String? {
        backend == .serverAPI ? Self.serverAPIGroup : nil
    }
}

/// An app's halt concerns its shared secret, which only verifyReceipt is sent: the Server API's
/// calls, and its configuration errors, answer to the Server API's group instead.
extension VerificationBackend {
    func haltingApp(_ app: String?) -> String? { self == .verifyReceipt ? app : nil }
}

extension AppleEndpoint {
    func haltingApp(_ app: String?) -> String? { backend.haltingApp(app) }
}

extension FleetGate {
    /// Leave to call `endpoint`, through its budget, for a subject of `app` (nil: not known yet);
    /// `lastApp` is the app whose receipt the caller's last call was about, and `redisClock` places
    /// the slots (see `FleetGate.admit`).
    public func admit(
        _ endpoint: AppleEndpoint, forApp app: String?, upTo wanted: Int = 1, within horizon: Duration = .zero,
        after lastAnswer: LastAnswer = .none, lastApp: String? = nil, placingSlotsBy redisClock: RedisClock? = nil,
        settings: FleetSettings
    ) throws(QueueError) -> Admission {
        try admit(
            upTo: wanted, within: horizon, after: lastAnswer, lastApp: lastApp, budget: settings.budget(for: endpoint),
            app: endpoint.haltingApp(app), placingSlotsBy: redisClock)
    }

    /// One subscription of `app` answered a configuration error from `backend`: counted toward
    /// halting that app (verifyReceipt: its shared secret) or the Server API. True once halted.
    public func reportConfigurationError(
        subscriptionID: Int64, app: String, reason: String, needed: Int, backend: VerificationBackend, settings: FleetSettings
    ) throws(QueueError) -> Bool {
        try reportConfigurationError(
            subscriptionID: subscriptionID, reason: reason, needed: needed, group: settings.haltGroup(for: backend),
            app: backend.haltingApp(app))
    }

    /// `endpoint` answered 429: its budget is spent for `wait`. Returns how long it now is.
    public func reportThrottled(_ endpoint: AppleEndpoint, for wait: Duration, settings: FleetSettings) throws(QueueError) -> Duration {
        guard let budget = settings.budget(for: endpoint) else { return wait }  // verifyReceipt never answers 429
        return try reportThrottled(budget, for: wait)
    }
}

extension FleetGate {
    /// The gate on a connection of its own, for a command that calls Apple outside the workers.
    public static func connecting(_ settings: FleetSettings) throws -> FleetGate {
        FleetGate(
            connection: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix),
            limit: settings.rateLimit, pausePolicy: settings.pausePolicy, clock: settings.scriptClock)
    }
}
