import Fleet
import JobQueue
import Lanes
import Logging
import RedisClient
import Synchronization

/// The per-client request limit of every `serve` replica together, kept in Redis (`RateLimiter`)
/// on lanes of its own, so that a slow or dead Redis never holds the lanes that serve requests.
final class FleetClientLimiter: Sendable {
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

    init(fleet: FleetSettings, limit: RateLimit, logger: Logger) {
        self.logger = logger
        lanes = LanePool(name: "rf-api-limit", size: 2) {
            try RateLimiter(
                connection: RedisConnection(fleet.redisConfiguration()), keys: QueueKeys(prefix: fleet.keyPrefix), limit: limit)
        }
    }

    /// Charges one request to `client` ("token:<name>" or "address:<ip>").
    func admit(_ client: String) async -> Verdict {
        do {
            return try await lanes.run { try $0.admit(client: client) }.map { .limited(retryAfter: $0) } ?? .admitted
        } catch {
            let now = ContinuousClock.now
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

    func shutdown() { lanes.shutdown() }
}
