import Foundation
import JobQueue
import RedisClient
import TestSupport

/// One test's own queue deployment: keys under a hash tag no other test uses.
struct Deployment: Sendable {
    let keys: QueueKeys
    let configuration: RedisConfiguration

    init() throws {
        keys = try QueueKeys(prefix: "{\(uniqueName("rfq"))}")
        configuration = try RedisConfiguration(url: TestServers.redisURL)
    }

    func connect() throws -> RedisConnection { try RedisConnection(configuration) }

    /// A queue handle on a connection of its own, as each worker thread has.
    func queue(
        _ consumer: String, retryPolicy: RetryPolicy = .standard, on connection: RedisConnection? = nil
    ) throws -> JobQueue {
        try JobQueue(connection: connection ?? connect(), keys: keys, consumer: consumer, retryPolicy: retryPolicy)
    }

    /// Deletes every key of this deployment.
    func deleteKeys(_ connection: RedisConnection) throws {
        try connection.deleteKeys(prefixed: keys.prefix)
    }
}

extension Deployment {
    /// Runs `body`, then deletes the deployment's keys, whether `body` succeeded or not.
    func cleaningUp<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        try await onOwnThread { try self.deleteKeys(self.connect()) }
        return try result.get()
    }
}

/// Runs `body` on a thread of its own with a fresh deployment and a connection, then deletes the
/// deployment's keys (whether `body` succeeded or not).
func withDeployment<T: Sendable>(
    _ body: @escaping @Sendable (Deployment, RedisConnection) throws -> T
) async throws -> T {
    let deployment = try Deployment()
    return try await onOwnThread {
        let connection = try deployment.connect()
        defer { try? deployment.deleteKeys(connection) }
        return try body(deployment, connection)
    }
}

extension RedisConnection {
    /// Redis's clock in ms, the clock the queue's scripts use.
    func redisNow() throws -> Int64 {
        let parts = try command("TIME").array ?? []
        let seconds = parts.first?.int ?? 0
        let micros = parts.last?.int ?? 0
        return seconds * 1000 + micros / 1000
    }

    /// The members of a sorted set with their scores, lowest first.
    func sortedSet(_ key: String) throws -> [(member: String, score: Int64)] {
        let flat = try command("ZRANGE", key, 0, -1, "WITHSCORES").array ?? []
        return stride(from: 0, to: flat.count - 1, by: 2).map {
            (flat[$0].string ?? "", Int64(flat[$0 + 1].string ?? "") ?? -1)
        }
    }

    func length(ofStream key: String) throws -> Int64 { try command("XLEN", key).int ?? -1 }
}

/// A failure as a worker would report it.
let timeoutFailure = JobFailure(errorClass: "timeout", message: "verifyReceipt did not answer within 30 s")

/// A retry policy whose delays are at most a millisecond, so tests need not wait.
func instantRetries(maxAttempts: Int) throws -> RetryPolicy {
    try RetryPolicy(base: .milliseconds(1), cap: .milliseconds(1), maxAttempts: maxAttempts)
}

/// `value`, or an error naming what was missing (`#require` records its issue only inside a
/// test's own task, not on the threads the Redis work runs on).
func unwrap<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw Missing(description: "expected \(what), found nothing") }
    return value
}

struct Missing: Error, CustomStringConvertible {
    let description: String
}
