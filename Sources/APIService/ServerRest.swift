import Foundation
import JobQueue
import PostgresClient
import RedisClient
import Synchronization

/// A server the API's lanes need that did not answer within the lanes' short deadline
/// (`APIServer.redisDeadline`, `APIServer.postgresDeadline`) is treated as down for a short rest
/// rather than waited for: the request is answered 503 with `Retry-After`, and so is every request
/// needing that server during the rest, at once and without a lane. So callers do not pile up on
/// lanes behind a frozen server, and those that need only the other one keep their lanes.
final class ServerRest: Sendable {
    /// How long requests needing the server are refused after it failed one.
    static let length = Duration.seconds(5)
    /// The answer's code, e.g. `redis_unavailable`.
    let code: String
    /// What the caller is told, e.g. "the fleet's Redis is not answering".
    let what: String
    /// Whether an error is the server's failure to answer, as opposed to a refusal of the request.
    private let isItsFailure: @Sendable (any Error) -> Bool
    private let restingUntil = Mutex<ContinuousClock.Instant?>(nil)

    init(code: String, what: String, isItsFailure: @escaping @Sendable (any Error) -> Bool) {
        (self.code, self.what, self.isItsFailure) = (code, what, isItsFailure)
    }

    /// Registrations need Redis (the rate limiter's slot, the queued job); reads do not.
    static func redis() -> ServerRest {
        ServerRest(code: "redis_unavailable", what: "the fleet's Redis is not answering") { error in
            if error is RedisError { return true }
            if case .redis = error as? QueueError { return true }
            return false
        }
    }

    /// Every lane's work needs PostgreSQL. A statement the server refused is not a failure to answer.
    static func postgres() -> ServerRest {
        ServerRest(code: "database_unavailable", what: "the fleet's database is not answering") { error in
            guard let error = error as? PostgresError else { return false }
            return [.connectionFailed, .connectionLost, .timeout].contains(error.kind)
        }
    }

    /// Runs `body`; refuses it at once while resting, and turns the server's failure into the 503
    /// that starts a rest.
    func guarding<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try refuseWhileResting()
        do {
            return try await body()
        } catch {
            throw resting(after: error)
        }
    }

    /// The same on a lane's thread, where work queued behind a stuck call is refused once it runs.
    func guardingOnLane<T>(_ body: () throws -> T) throws -> T {
        try refuseWhileResting()
        do {
            return try body()
        } catch {
            throw resting(after: error)
        }
    }

    /// Throws the 503 while resting.
    func refuseWhileResting() throws(APIError) {
        if let until = restingUntil.withLock({ $0 }), ContinuousClock.now < until {
            throw refusal(retryAfter: ContinuousClock.now.duration(to: until))
        }
    }

    /// The server's failure starts a rest and becomes the 503; any other error stays itself.
    private func resting(after error: any Error) -> any Error {
        guard isItsFailure(error) else { return error }
        restingUntil.withLock { $0 = .now + Self.length }
        return refusal(retryAfter: Self.length)
    }

    private func refusal(retryAfter: Duration) -> APIError {
        .unavailable(code, "\(what); try again shortly", retryAfter: max(.seconds(1), retryAfter))
    }
}
