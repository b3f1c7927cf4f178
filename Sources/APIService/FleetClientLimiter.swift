import Fleet
import FleetConfiguration
import JobQueue
import Lanes
import Logging
import RedisClient
import Synchronization

/// The per-client request limit of every `serve` replica together, kept in Redis (`RateLimiter`)
/// on lanes of its own, so that a slow or dead Redis never holds the lanes that serve requests.
///
/// It is on every request's path, so Redis gets a short deadline here (`deadline`), and once it
/// has missed one the limit is not asked for `restAfterFailure`: requests go on at once as if
/// Redis could not be asked (`.unknown`), and the first one after the rest finds out whether it is back.
final class FleetClientLimiter: Sendable {
    static let deadline = Duration.milliseconds(250)
    static let restAfterFailure = Duration.seconds(2)

    enum Verdict: Equatable {
        case admitted
        case limited(retryAfter: Duration)
        /// Redis could not be asked.
        case unknown
    }

    private let lanes: LanePool<RateLimiter>
    private let logger: Logger
    /// When a Redis failure was last logged: one line per 10 s, not one per request.
    private let lastComplaint = Mutex<ContinuousClock.Instant?>(nil)
    /// Until when Redis is not asked, after it failed.
    private let restingUntil = Mutex<ContinuousClock.Instant?>(nil)

    init(fleet: FleetSettings, limit: RateLimit, logger: Logger) {
        self.logger = logger
        lanes = LanePool(name: "rf-api-limit", size: 2) {
            var redis = try fleet.redisConfiguration()
            (redis.connectTimeout, redis.commandTimeout) = (Self.deadline, Self.deadline)
            return try RateLimiter(
                connection: RedisConnection(redis), keys: QueueKeys(prefix: fleet.keyPrefix), limit: limit, clock: fleet.scriptClock)
        }
    }

    /// Charges one request to `client` ("token:<name>" or "address:<ip>").
    func admit(_ client: String) async -> Verdict {
        if let until = restingUntil.withLock({ $0 }), ContinuousClock.now < until { return .unknown }
        do {
            let verdict = try await lanes.run { try $0.admit(client: client) }.map { .limited(retryAfter: $0) } ?? Verdict.admitted
            restingUntil.withLock { $0 = nil }
            return verdict
        } catch {
            let now = ContinuousClock.now
            restingUntil.withLock { $0 = now + Self.restAfterFailure }
            let complain = lastComplaint.withLock { last in
                guard last.map({ $0.duration(to: now) >= .seconds(10) }) ?? true else { return false }
                last = now
                return true
            }
            if complain {
                logger.error("the client rate limit cannot be checked: authenticated clients pass, others get 503",
                             metadata: ["error": "\(error)"])
            }
            return .unknown
        }
    }

    /// Charges one request to `address`, a caller who is not Apple and holds no token (a forgery,
    /// garbage or a body too large on Apple's path): 429 once it has sent too much.
    func charge(address: String?, counting metrics: APIMetrics) async throws(APIError) {
        if case .limited(let wait) = await admit("address:\(address ?? "unknown")") {
            metrics.rejected("rate_limited")
            throw APIError.rateLimited(retryAfter: wait)
        }
    }

    func shutdown() { lanes.shutdown() }
}
