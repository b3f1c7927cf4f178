import FleetConfiguration
import Foundation
import TestSupport
import Testing

/// A request that never arrives whole holds its connection only until the request deadline: a
/// caller announcing a megabyte and sending a byte, or never ending its headers, is cut off.
@Suite struct RequestDeadlineTests {
    /// Sends `bytes` on a new connection to `port` and returns how long the server took to close it
    /// (nil: still open after `limit`).
    static func closedAfter(sending bytes: String, to port: Int, limit: Duration) throws -> Duration? {
        let socket = try connectLoopback(port)
        defer { close(socket) }
        _ = bytes.withCString { send(socket, $0, strlen($0), 0) }
        var timeout = timeval(tv_sec: Int(limit.components.seconds), tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let started = ContinuousClock.now
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let read = recv(socket, &buffer, buffer.count, 0)
            if read == 0 { return started.duration(to: .now) }  // the server closed it
            if read < 0 { return errno == ECONNRESET ? started.duration(to: .now) : nil }  // reset, or timed out: still open
        }
    }

    @Test func aBodyOrHeadersThatNeverEndAreCutOffAtTheDeadline() async throws {
        try await APIHarness.with(configure: { $0.requestDeadline = .seconds(1) }) { api in
            let port = api.port
            // Real time: the server's deadline runs on its event loop's clock.
            let body = try await onOwnThread {
                try Self.closedAfter(
                    sending: "POST /v1/notifications/apple HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nA", to: port,
                    limit: .seconds(10))
            }
            #expect(body.map { $0 < .seconds(5) } == true, "a body that never ends: \(String(describing: body))")
            let headers = try await onOwnThread {
                try Self.closedAfter(sending: "GET /v1/subscriptions/1 HTTP/1.1\r\nHost: x\r\n", to: port, limit: .seconds(10))
            }
            #expect(headers.map { $0 < .seconds(5) } == true, "headers that never end: \(String(describing: headers))")
            // A whole request is answered as ever.
            #expect(try await api.get("/v1/subscriptions/1").status == 404)
        }
    }

    /// A caller opening connections by the thousand is refused the ones past the cap, at once,
    /// while those held stay open: the process keeps descriptors for its own connections, and
    /// answers again as soon as the flood ends.
    @Test func connectionsPastTheCapAreClosedAtOnce() async throws {
        try await APIHarness.with(configure: { $0.maxConnections = 8 }) { api in
            let port = api.port
            // Each held connection is answered once first, so the server has surely set it up (over two
            // event loops, connections opened together may be set up in any order).
            let held = try await onOwnThread {
                try (0..<8).map { _ in
                    let socket = try connectLoopback(port)
                    _ = "GET /v1/subscriptions/1 HTTP/1.1\r\nHost: x\r\n\r\n".withCString { send(socket, $0, strlen($0), 0) }
                    var buffer = [UInt8](repeating: 0, count: 4_096)
                    _ = recv(socket, &buffer, buffer.count, 0)
                    return socket
                }
            }
            let refused = try await onOwnThread {
                try Self.closedAfter(sending: "GET /v1/subscriptions/1 HTTP/1.1\r\nHost: x\r\n\r\n", to: port, limit: .seconds(5))
            }
            #expect(refused.map { $0 < .seconds(2) } == true, "the ninth: \(String(describing: refused))")
            let tenth = try await onOwnThread { try Self.closedAfter(sending: "", to: port, limit: .seconds(5)) }
            #expect(tenth.map { $0 < .seconds(2) } == true, "a tenth is refused too while eight are held")
            for socket in held { close(socket) }
            let answered = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
                (try? await api.get("/v1/subscriptions/1").status) == 404
            }
            #expect(answered, "room again once the held connections close")
        }
    }

    /// A long-running process starts by raising its soft descriptor limit to the hard one
    /// (`ProcessRoot.run`), so the cap it derives leaves room for thousands of callers.
    @Test func theDescriptorLimitIsRaisedToTheHardOne() throws {
        var limit = rlimit()
        let raised = DescriptorLimit.raise()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        #expect(raised == Int(clamping: limit.rlim_max) && limit.rlim_cur == limit.rlim_max)
        #expect(DescriptorLimit.connectionCap == max(16, raised - DescriptorLimit.reserve))
    }
}
