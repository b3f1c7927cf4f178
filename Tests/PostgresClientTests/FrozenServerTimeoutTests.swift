import Foundation
import PostgresClient
import TestSupport
import Testing

/// A stopped server (SIGSTOP) still has its kernel accept the bytes, so only the client's own
/// deadline ends a call. The server here is the shared test server behind a `FreezableProxy`.
@Suite struct FrozenServerTimeoutTests {
    static let deadline: Duration = .seconds(2)
    /// Generous for a loaded 2-core machine (the other suites run beside these); a call without a
    /// deadline would wait for the thaw, 2 s after the bound.
    static let bound: Duration = deadline + .seconds(8)

    @Test func aCallToAFrozenServerTimesOutWithinItsDeadlineAndTheNextCallReconnects() async throws {
        let (proxy, configuration) = try proxiedServer()
        defer { proxy.stop() }
        let (before, failed, elapsed, after) = try await onOwnThread {
            let connection = try PostgresConnection(configuration: configuration)
            let before = connection.backendPID
            proxy.freeze(forAtMost: Self.bound + .seconds(2))
            let started = ContinuousClock.now
            let failed = Result { try connection.query("SELECT 1 AS one") }
            let elapsed = started.duration(to: .now)
            proxy.thaw()
            let after = try connection.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int64()
            return (before, failed, elapsed, after)
        }
        let error = try #require(throws: PostgresError.self) { try failed.get() }
        #expect(error.kind == .timeout)
        #expect(elapsed >= Self.deadline && elapsed < Self.bound, "gave up after \(elapsed)")
        #expect(error.description.contains("127.0.0.1:\(proxy.port)"), "names the server: \(error)")
        #expect(error.description.contains("\(Self.deadline)"), "names the deadline: \(error)")
        let password = try #require(URLComponents(string: TestServers.postgresURL)?.password)
        #expect(!error.description.contains(password))
        #expect(after != nil && after != Int64(before), "a new session")
    }

    @Test func aTransactionWhoseStatementTimesOutCommitsNothingAndTheNextTransactionWorks() async throws {
        let table = uniqueName("frozen_write")
        let (proxy, configuration) = try proxiedServer()
        defer { proxy.stop() }
        let (failed, elapsed, committed, rows) = try await onOwnThread {
            let direct = try connect()
            try direct.execute("CREATE TABLE \(table) (n int)")
            defer { _ = try? direct.execute("DROP TABLE \(table)") }
            let connection = try PostgresConnection(configuration: configuration)
            let started = ContinuousClock.now
            let failed = Result {
                try connection.transaction { transaction in
                    try transaction.execute("INSERT INTO \(table) VALUES (1)")
                    proxy.freeze(forAtMost: Self.bound + .seconds(2))
                    try transaction.execute("INSERT INTO \(table) VALUES (2)")
                }
            }
            let elapsed = started.duration(to: .now)
            proxy.thaw()
            let committed = try connection.transaction { try $0.execute("INSERT INTO \(table) VALUES (3)") }
            let rows = try direct.query("SELECT n FROM \(table) ORDER BY n").map { try $0["n"].int64() }
            return (failed, elapsed, committed, rows)
        }
        let error = try #require(throws: PostgresError.self) { try failed.get() }
        #expect(error.kind == .timeout)
        #expect(elapsed < Self.bound, "gave up after \(elapsed)")
        #expect(committed == 1)
        #expect(rows == [3], "nothing of the timed-out transaction")
    }

    /// The relay's loop: wait for notifications, then query. A frozen server only makes the wait
    /// come back empty; the query times out; after the thaw the listener is listening again.
    @Test func aListenerWhoseServerFrozeTimesOutThenListensAgain() async throws {
        let channel = uniqueName("frozen")
        let (proxy, configuration) = try proxiedServer()
        defer { proxy.stop() }
        let (quiet, failed, elapsed, received) = try await onOwnThread {
            let listener = try PostgresConnection(configuration: configuration)
            try listener.listen(channel)
            proxy.freeze(forAtMost: Self.bound + .seconds(3))
            let started = ContinuousClock.now
            let quiet = try listener.waitForNotifications(timeout: .milliseconds(500))
            let failed = Result { try listener.query("SELECT 1 AS one") }
            let elapsed = started.duration(to: .now)
            proxy.thaw()
            _ = try listener.waitForNotifications(timeout: .zero)  // reconnects and listens again
            try connect().query("SELECT pg_notify($1, $2)", [.text(channel), "after the thaw"])
            return (quiet, failed, elapsed, try listener.waitForNotifications(timeout: .seconds(5)).map(\.payload))
        }
        #expect(quiet.isEmpty)
        let error = try #require(throws: PostgresError.self) { try failed.get() }
        #expect(error.kind == .timeout)
        #expect(elapsed < Self.bound + .milliseconds(500), "gave up after \(elapsed)")
        #expect(received == ["after the thaw"])
    }

    /// A proxy in front of the test server, and a configuration that reaches the server through
    /// it, with the short deadline.
    private func proxiedServer() throws -> (FreezableProxy, PostgresConfiguration) {
        var url = try #require(URLComponents(string: TestServers.postgresURL))
        let proxy = try FreezableProxy(forwardingTo: try #require(url.port))
        url.host = "127.0.0.1"
        url.port = proxy.port
        var configuration = try PostgresConfiguration(try #require(url.string))
        configuration.applicationName = "postgres-client-tests"
        configuration.callTimeout = Self.deadline
        return (proxy, configuration)
    }
}
