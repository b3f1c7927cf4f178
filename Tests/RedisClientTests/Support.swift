import Foundation
import RedisClient
import TestSupport

/// The test server, as TestServers.redisURL describes it, adjusted by `adjust`.
func testConfiguration(_ adjust: (inout RedisConfiguration) -> Void = { _ in }) throws -> RedisConfiguration {
    var configuration = try RedisConfiguration(url: TestServers.redisURL)
    adjust(&configuration)
    return configuration
}

/// The test server's unix socket (scripts/services starts Redis with one).
let unixSocketPath: String = TestServers.redisSocket


/// Runs `body` on a thread of its own with a new connection to `configuration` (the test server
/// by default).
func withConnection<T: Sendable>(
    _ configuration: RedisConfiguration? = nil, _ body: @escaping @Sendable (RedisConnection) throws -> T
) async throws -> T {
    let configuration = try configuration ?? testConfiguration()
    return try await onOwnThread { try body(RedisConnection(configuration)) }
}

/// The bytes of `text`, for comparing with `.bulk` replies.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
