import Foundation
import RedisClient
import TestSupport
import Testing

@Suite("Connecting, failing and reconnecting")
struct ConnectionTests {
    @Test("a wrong password is a clear authentication error that does not contain the password")
    func wrongPassword() async throws {
        let wrongPassword = uniqueName("not-the-password")
        let configuration = try testConfiguration { $0.password = wrongPassword }
        let error = await #expect(throws: RedisError.self) {
            try await onOwnThread { _ = try RedisConnection(configuration) }
        }
        guard case .authenticationFailed(_, let message) = error else {
            Issue.record("expected .authenticationFailed, got \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("WRONGPASS") || message.contains("invalid password"))
        #expect(!String(describing: error).contains(wrongPassword))
    }

    @Test("no password for a server that wants one is an authentication error (NOAUTH)")
    func missingPassword() async throws {
        let configuration = try testConfiguration { $0.password = nil }
        let error = await #expect(throws: RedisError.self) {
            try await onOwnThread { _ = try RedisConnection(configuration) }
        }
        guard case .authenticationFailed(_, let message) = error else {
            Issue.record("expected .authenticationFailed, got \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("NOAUTH"))
    }

    @Test("a refused connection is a connect error naming the server")
    func refused() async throws {
        // Port 1 (tcpmux) has no listener on any machine this runs on.
        let configuration = try testConfiguration { $0.endpoint = .tcp(host: "127.0.0.1", port: 1) }
        let error = await #expect(throws: RedisError.self) {
            try await onOwnThread { _ = try RedisConnection(configuration) }
        }
        guard case .connectFailed(let endpoint, let reason) = error else {
            Issue.record("expected .connectFailed, got \(String(describing: error))")
            return
        }
        #expect(endpoint == "127.0.0.1:1")
        #expect(reason.contains("refused"))
    }

    @Test("the unix socket works (given as a URL) and SELECT of another database is honoured")
    func unixSocketAndDatabase() async throws {
        let key = uniqueName("rc_unix")
        let tcp = try testConfiguration()
        let password = try #require(tcp.password).addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let overSocket = try RedisConfiguration(url: "unix://\(unixSocketPath)?db=7&password=\(password)")
        let (clientInfo, inDatabase0, inDatabase7) = try await withConnection(overSocket) { socket in
            defer { _ = try? socket.command("DEL", key) }
            try socket.command("SET", key, "in seven")
            let inDatabase0 = try RedisConnection(tcp).command("GET", key)
            var database7 = tcp
            database7.database = 7
            return (try socket.command("CLIENT", "INFO").string ?? "", inDatabase0, try RedisConnection(database7).command("GET", key))
        }
        #expect(clientInfo.contains(" db=7 "))
        #expect(clientInfo.contains("flags=U"), "CLIENT INFO flags a unix socket client with U")
        #expect(inDatabase0 == .null)
        #expect(inDatabase7 == .bulk(bytes("in seven")))
    }

    @Test("the command timeout ends a long BLPOP early with .timeout; the next command reconnects")
    func commandTimeout() async throws {
        let key = uniqueName("rc_timeout")
        // Long enough that connecting (AUTH, SELECT) fits in it on a loaded machine (1 s did not,
        // beside the other suites), far shorter than the BLPOP's own minute.
        let deadline = Duration.seconds(4)
        let configuration = try testConfiguration { $0.commandTimeout = deadline }
        let (blocked, elapsed, next) = try await withConnection(configuration) { connection in
            let clock = ContinuousClock()
            let start = clock.now
            let blocked = Result { () throws(RedisError) in try connection.command("BLPOP", key, 60) }
            return (blocked, start.duration(to: clock.now), Result { () throws(RedisError) in try connection.command("PING") })
        }
        guard case .failure(.timeout(_, let after)) = blocked else {
            Issue.record("expected .timeout, got \(blocked)")
            return
        }
        #expect(after == deadline)
        #expect(elapsed >= deadline - .milliseconds(10) && elapsed < .seconds(40), "took \(elapsed)")
        #expect(next == .success(.status("PONG")))
    }

    @Test(
        "after the server drops the connection the next command throws .connectionLost, the one after reconnects",
        // Over the unix socket too: there a write to the closed socket raises
        // SIGPIPE, which must become .connectionLost rather than kill the process.
        arguments: ["tcp", "unix socket"]
    )
    func reconnectAfterKill(transport: String) async throws {
        let configuration = try testConfiguration {
            if transport == "unix socket" { $0.endpoint = .unixSocket(path: unixSocketPath) }
            $0.database = 5
        }
        let (killed, broken, recovered, clientInfo, oldID, newID) = try await onOwnThread {
            let victim = try RedisConnection(configuration)
            let oldID = try #require(try victim.command("CLIENT", "ID").int)
            let killed = try RedisConnection(configuration).command("CLIENT", "KILL", "ID", oldID)
            let broken = Result { () throws(RedisError) in try victim.command("PING") }
            let recovered = Result { () throws(RedisError) in try victim.command("PING") }
            let clientInfo = try victim.command("CLIENT", "INFO").string ?? ""
            return (killed, broken, recovered, clientInfo, oldID, try victim.command("CLIENT", "ID").int)
        }
        #expect(killed == .integer(1))
        guard case .failure(.connectionLost(let endpoint, _)) = broken else {
            Issue.record("expected .connectionLost, got \(broken)")
            return
        }
        #expect(endpoint == configuration.endpoint.description)
        #expect(recovered == .success(.status("PONG")))
        #expect(newID != oldID, "a new connection")
        #expect(clientInfo.contains(" db=5 "), "SELECT is repeated on reconnect")
    }

    @Test("opening and closing 1,000 connections (and failing 200 connects) leaks no file descriptors")
    func noLeakedDescriptors() async throws {
        let good = try testConfiguration()
        let wrongPassword = try testConfiguration { $0.password = "wrong" }
        let refused = try testConfiguration { $0.endpoint = .tcp(host: "127.0.0.1", port: 1) }
        let leaked = try await descriptorsLeaked {
            try await onOwnThread {
                for _ in 0..<1_000 { try RedisConnection(good).command("PING") }
                for _ in 0..<100 { _ = try? RedisConnection(wrongPassword) }
                for _ in 0..<100 { _ = try? RedisConnection(refused) }
            }
        }
        #expect(leaked <= allowedDescriptorNoise, "\(leaked) descriptors more than before")
    }
}
