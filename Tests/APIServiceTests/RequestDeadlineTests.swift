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
            if read < 0 { return nil }  // the receive timed out: still open
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
}
