import Foundation
import JobQueue
import RedisClient
import Synchronization

/// Registrations need the fleet's Redis (the rate limiter's slot, the queued job). When it does not
/// answer within the lanes' short deadline (`APIServer.redisDeadline`), the registration is
/// answered 503 `redis_unavailable`, and so is every registration for a short rest after, at once
/// and without a lane: callers do not pile up on lanes waiting for a frozen Redis, so reads, which
/// need only PostgreSQL, keep their lanes and answer as fast as without registrations.
final class RedisRest: Sendable {
    /// How long registrations are refused after Redis failed one.
    static let length = Duration.seconds(5)
    private let restingUntil = Mutex<ContinuousClock.Instant?>(nil)

    /// Runs `body`, a registration; refuses it at once while resting, and turns a Redis failure
    /// into the 503 that starts a rest.
    func guarding<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try refuseWhileResting()
        do {
            return try await body()
        } catch let error where Self.isRedis(error) {
            restingUntil.withLock { $0 = .now + Self.length }
            throw Self.refusal(retryAfter: Self.length)
        }
    }

    /// Throws the 503 while resting: at a registration's start, and again once it has a lane (it
    /// may have waited for one while Redis failed another).
    func refuseWhileResting() throws(APIError) {
        if let until = restingUntil.withLock({ $0 }), ContinuousClock.now < until {
            throw Self.refusal(retryAfter: ContinuousClock.now.duration(to: until))
        }
    }

    private static func isRedis(_ error: any Error) -> Bool {
        if error is RedisError { return true }
        if case .redis = error as? QueueError { return true }
        return false
    }

    private static func refusal(retryAfter: Duration) -> APIError {
        .unavailable("redis_unavailable", "the fleet's Redis is not answering; try again shortly",
                     retryAfter: max(.seconds(1), retryAfter))
    }
}
