import Foundation
import RedisClient
import TestSupport
import Testing

/// A stopped server (SIGSTOP) still has its kernel accept the bytes, so only the socket timeouts
/// end a command. The server here is the shared test server behind a `FreezableProxy`.
/// The deadline is long enough that a loaded machine's Redis still answers a live command within
/// it, and a bound with slack still tells a deadline from the freeze.
@Suite struct FrozenServerTimeoutTests {
    static let deadline: Duration = .seconds(4)
    /// Generous for a loaded 2-core machine (9.07 s was seen with 3 s): the bound stays well short
    /// of the 40 s freeze, which a command without a deadline would wait out.
    static let slack: Duration = .seconds(9)

    @Test func aWriteToAFrozenServerTimesOutAndTheNextCommandReconnects() async throws {
        let key = uniqueName("rc_frozen_write")
        let (proxy, configuration) = try proxiedServer()
        defer { proxy.stop() }
        // Far more than the kernel buffers on both sides of the proxy hold, so the write itself stalls.
        let value = [UInt8](repeating: 120, count: 64 << 20)
        let (failed, elapsed, next, clientsBefore, clientsAfter) = try await onOwnThread {
            let connection = try RedisConnection(configuration)
            let clientsBefore = try connection.command("CLIENT", "ID").int
            // Far longer than the bound below: a command without a deadline would wait for the thaw.
            proxy.freeze(forAtMost: .seconds(40))
            let started = ContinuousClock.now
            let failed = Result { () throws(RedisError) in try connection.command("SET", key, value) }
            let elapsed = started.duration(to: .now)
            proxy.thaw()
            let next = Result { () throws(RedisError) in try connection.command("PING") }
            defer { _ = try? connection.command("DEL", key) }
            return (failed, elapsed, next, clientsBefore, try connection.command("CLIENT", "ID").int)
        }
        guard case .failure(.timeout(let endpoint, let after)) = failed else {
            Issue.record("expected .timeout, got \(failed)")
            return
        }
        #expect(endpoint == "127.0.0.1:\(proxy.port)")
        #expect(after == Self.deadline)
        // The timeout bounds each write: the first ones move what fits into the buffers (the
        // kernel grows them as they fill, so a second write may still move some) and return at
        // their timeout; the next moves nothing and fails at its own.
        #expect(elapsed < Self.deadline * 3 + Self.slack, "gave up after \(elapsed)")
        #expect(next == .success(.status("PONG")))
        #expect(clientsAfter != clientsBefore, "a new connection")
    }

    @Test func aBlockingCommandWaitsItsBlockTimeAndOnAFrozenServerTimesOutAfterBlockPlusDeadline() async throws {
        let key = uniqueName("rc_frozen_block")
        let (proxy, configuration) = try proxiedServer()
        defer { proxy.stop() }
        let block: Duration = .seconds(3)
        let (waited, waitedFor, failed, elapsed, next) = try await onOwnThread {
            let connection = try RedisConnection(configuration)
            let clock = ContinuousClock()
            // Longer than the deadline: the wait is the command's, not a frozen server's.
            var started = clock.now
            let waited = Result { () throws(RedisError) in try connection.command(["BLPOP", key, 3], blockingFor: block) }
            let waitedFor = started.duration(to: clock.now)
            proxy.freeze(forAtMost: block + Self.deadline + Self.slack + .seconds(2))
            started = clock.now
            let failed = Result { () throws(RedisError) in try connection.command(["BLPOP", key, 3], blockingFor: block) }
            let elapsed = started.duration(to: clock.now)
            proxy.thaw()
            return (waited, waitedFor, failed, elapsed, Result { () throws(RedisError) in try connection.command("PING") })
        }
        #expect(waited == .success(.null), "BLPOP's own timeout")
        #expect(waitedFor >= block - .milliseconds(50), "waited \(waitedFor)")
        guard case .failure(.timeout(_, let after)) = failed else {
            Issue.record("expected .timeout, got \(failed)")
            return
        }
        #expect(after == block + Self.deadline)
        #expect(elapsed >= block + Self.deadline && elapsed < block + Self.deadline + Self.slack, "gave up after \(elapsed)")
        #expect(next == .success(.status("PONG")))
    }

    /// A proxy in front of the test server, and a configuration that reaches the server through
    /// it, with the short deadline.
    private func proxiedServer() throws -> (FreezableProxy, RedisConfiguration) {
        guard case .tcp(_, let port) = try testConfiguration().endpoint else {
            throw RedisError.invalidConfiguration("the test server is not reached over TCP")
        }
        let proxy = try FreezableProxy(forwardingTo: port)
        let configuration = try testConfiguration {
            $0.endpoint = .tcp(host: "127.0.0.1", port: proxy.port)
            $0.commandTimeout = Self.deadline
        }
        return (proxy, configuration)
    }
}
