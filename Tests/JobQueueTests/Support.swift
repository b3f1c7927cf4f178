import Foundation
import JobQueue
import RedisClient
import TestSupport

/// One test's own queue deployment: keys under a hash tag no other test uses.
struct Deployment: Sendable {
    let keys: QueueKeys
    let configuration: RedisConfiguration
    /// The clock the scripts of the handles made here read: Redis's, or `clock`, which the test moves.
    let scriptClock: ScriptClock

    init(clock: ScriptClock = .redis) throws {
        keys = try QueueKeys(prefix: "{\(uniqueName("rfq"))}")
        configuration = try RedisConfiguration(url: TestServers.redisURL)
        scriptClock = clock
    }

    /// The time the handles made with `ScriptClock.driven` read.
    var clock: DrivenClock { DrivenClock(key: keys.drivenClock, configuration: configuration) }

    func connect() throws -> RedisConnection { try RedisConnection(configuration) }

    /// A queue handle on a connection of its own, as each worker thread has.
    func queue(
        _ consumer: String, retryPolicy: RetryPolicy = .standard, on connection: RedisConnection? = nil
    ) throws -> JobQueue {
        try JobQueue(
            connection: connection ?? connect(), keys: keys, consumer: consumer, retryPolicy: retryPolicy, clock: scriptClock)
    }

    /// A gate on a connection of its own, as each worker thread has.
    func gate(limit: RateLimit, pausePolicy: PausePolicy = .standard, on connection: RedisConnection? = nil) throws -> FleetGate {
        FleetGate(connection: try connection ?? connect(), keys: keys, limit: limit, pausePolicy: pausePolicy, clock: scriptClock)
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

/// Runs `body` on a thread of its own with a fresh deployment (whose handles read `clock`) and a
/// connection, then deletes the deployment's keys (whether `body` succeeded or not).
func withDeployment<T: Sendable>(
    clock: ScriptClock = .redis, _ body: @escaping @Sendable (Deployment, RedisConnection) throws -> T
) async throws -> T {
    let deployment = try Deployment(clock: clock)
    return try await onOwnThread {
        let connection = try deployment.connect()
        defer { try? deployment.deleteKeys(connection) }
        return try body(deployment, connection)
    }
}

/// A deployment's driven clock: the time its handles made with `ScriptClock.driven` read, which
/// stands still until the test moves it. It starts at Redis's time when first read, by a script or
/// by the test.
///
/// Only the scripts' now moves: keys still expire, stream ids still grow and XAUTOCLAIM still
/// measures idle time on Redis's clock.
struct DrivenClock: Sendable {
    let key: String
    let configuration: RedisConfiguration

    /// The clock's time in ms since the epoch, as the scripts read it.
    func now(on connection: RedisConnection) throws -> Int64 {
        try start(on: connection)
        return try unwrap(try connection.command("GET", key).int, "the driven clock") / 1000
    }

    /// Moves the clock on by `duration` (whole µs).
    func advance(by duration: Duration, on connection: RedisConnection) throws {
        try start(on: connection)
        try connection.command("INCRBY", key, duration.wholeMicroseconds)
    }

    /// Moves the clock on by `duration` (whole µs), on a connection and a thread of its own.
    func advance(by duration: Duration) async throws {
        try await onOwnThread { try advance(by: duration, on: RedisConnection(configuration)) }
    }

    /// Sets the clock to Redis's time unless it runs already.
    private func start(on connection: RedisConnection) throws {
        try connection.command("SET", key, try connection.redisMicroseconds(), "NX")
    }
}

extension RedisConnection {
    /// Redis's clock in ms, the clock the queue's scripts read in production.
    func redisNow() throws -> Int64 { try redisMicroseconds() / 1000 }

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

extension Duration {
    /// The duration in whole µs, as the driven clock counts.
    var wholeMicroseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
}
