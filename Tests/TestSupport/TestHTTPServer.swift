import Foundation
import Synchronization

/// A tiny HTTP/1.1 server on 127.0.0.1, just enough to test HTTP clients against real sockets.
/// One thread accepts connections; each connection gets its own thread, which serves its
/// requests in order (keep-alive) and behaves as the test asks. It understands requests with a
/// Content-Length body only, which is what the client sends.
public final class TestHTTPServer: Sendable {
    public enum Behavior: Sendable {
        /// Answers 200 with the request's body and Content-Type, and its method in X-Echo-Method.
        case echo
        /// Waits, then echoes.
        case delay(Duration)
        /// Reads the request and never answers: the connection stays open until the server stops.
        case hold
        /// Answers 200 with a body that never ends (no length; sent until the client leaves).
        case endlessBody
        /// Reads the request, then closes the connection without answering.
        case hangUp
        /// Reads the request, then resets the connection (TCP RST) without answering.
        case reset
        /// Holds requests until this many have arrived (over all connections), then answers each with
        /// the response: the answers reach the clients at the same moment.
        case respondTogether(Int, Response)
        /// Answers the first request with the first response, the second with the second, and so
        /// on, counting over all connections; once they run out, the last one answers every request.
        case respond([Response])
    }

    /// A canned answer for `.respond`.
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    public struct Request: Sendable {
        public let method: String
        public let target: String
        /// Header fields by lowercased name.
        public let headers: [String: String]
        public let body: [UInt8]
    }

    public let port: Int
    private let behavior: Behavior
    private let listener: Int32
    private let stopping = Atomic<Bool>(false)
    private let accepted = Atomic<Int>(0)
    private let open = Atomic<Int>(0)
    private let received = Mutex<[Request]>([])
    private let threads = DispatchGroup()

    /// Connections accepted so far.
    public var acceptedConnections: Int { accepted.load(ordering: .relaxed) }
    /// Connections not yet closed (by either side).
    public var openConnections: Int { open.load(ordering: .relaxed) }
    /// Every request received, in order.
    public var requests: [Request] { received.withLock { $0 } }
    public var sawExpectContinue: Bool { requests.contains { $0.headers["expect"] == "100-continue" } }

    public init(_ behavior: Behavior = .echo) throws {
        (listener, port) = try listenOnLoopback()
        self.behavior = behavior
        threads.enter()
        Thread { [self] in
            acceptConnections()
            threads.leave()
        }.start()
    }

    /// Stops accepting, ends every connection and waits for all the server's threads. Calls after
    /// the first do nothing, so a test may stop a server early and again on its way out.
    public func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        threads.wait()
        close(listener)
    }

    private func acceptConnections() {
        while waitUntilReadable(listener) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            accepted.add(1, ordering: .relaxed)
            open.add(1, ordering: .relaxed)
            threads.enter()
            Thread { [self] in
                serve(connection)
                close(connection)
                open.subtract(1, ordering: .relaxed)
                threads.leave()
            }.start()
        }
    }

    private func serve(_ connection: Int32) {
        var buffer: [UInt8] = []
        while let request = readRequest(connection, &buffer) {
            // Appended and counted under one lock, so concurrent requests each get their own turn.
            let turn = received.withLock { requests in
                requests.append(request)
                return requests.count - 1
            }
            switch behavior {
            case .echo:
                echo(request, on: connection)
            case .delay(let duration):
                guard pause(for: duration) else { return }
                echo(request, on: connection)
            case .hold:
                _ = pause(for: .seconds(86_400))  // until the server stops
                return
            case .endlessBody:
                sendEndlessBody(on: connection)
                return
            case .hangUp:
                return
            case .reset:
                // Lingering for zero seconds makes close() send RST instead of FIN.
                var reset = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
                return
            case .respondTogether(let count, let response):
                while requests.count < count {
                    guard pause(for: .milliseconds(1)) else { return }
                }
                answer(response, on: connection)
            case .respond(let responses):
                guard let response = responses[safe: turn] ?? responses.last else { return }
                answer(response, on: connection)
            }
        }
    }

    private func answer(_ response: Response, on connection: Int32) {
        let fields = response.headers.map { "\($0.name): \($0.value)\r\n" }.joined()
        let head = "HTTP/1.1 \(response.status) Canned\r\n\(fields)Content-Length: \(response.body.count)\r\n\r\n"
        sendAll(Array(head.utf8) + response.body, on: connection)
    }

    /// Sends a 200 head without a length, then body bytes until the client goes away or the server stops.
    private func sendEndlessBody(on connection: Int32) {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
        guard sendAll(Array(head.utf8), on: connection) else { return }
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
        while !stopping.load(ordering: .relaxed), sendAll(chunk, on: connection) {}
    }

    private func echo(_ request: Request, on connection: Int32) {
        let head = "HTTP/1.1 200 OK\r\n"
            + "Content-Type: \(request.headers["content-type"] ?? "application/octet-stream")\r\n"
            + "Content-Length: \(request.body.count)\r\n"
            + "X-Echo-Method: \(request.method)\r\n\r\n"
        sendAll(Array(head.utf8) + request.body, on: connection)
    }

    /// The next request on the connection, or nil when it closed, the server stops, or the bytes
    /// are not HTTP (a TLS handshake, say: that gets a 400 first, as a real server would send).
    private func readRequest(_ connection: Int32, _ buffer: inout [UInt8]) -> Request? {
        let separator = Array("\r\n\r\n".utf8)
        while buffer.firstRange(of: separator) == nil {
            guard receive(connection, into: &buffer) else { return nil }
            if let first = buffer.first, !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) {
                sendAll(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), on: connection)
                return nil
            }
        }
        let headEnd = buffer.firstRange(of: separator)!.upperBound
        let lines = String(decoding: buffer[..<headEnd], as: UTF8.self).split(separator: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < headEnd + length {
            guard receive(connection, into: &buffer) else { return nil }
        }
        let body = Array(buffer[headEnd..<headEnd + length])
        buffer.removeFirst(headEnd + length)
        return Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: body)
    }

    /// Appends what arrives next; false when the peer closed or the server stops.
    private func receive(_ connection: Int32, into buffer: inout [UInt8]) -> Bool {
        guard waitUntilReadable(connection) else { return false }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = recv(connection, &chunk, chunk.count, 0)
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }

    /// Polls in short slices so that `stop()` is noticed; false once the server stops.
    private func waitUntilReadable(_ socket: Int32) -> Bool {
        var request = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while !stopping.load(ordering: .relaxed) {
            if poll(&request, 1, 20) > 0 { return true }
        }
        return false
    }

    /// Sleeps in short slices so that `stop()` is noticed; false if the server stops meanwhile.
    private func pause(for duration: Duration) -> Bool {
        !eventuallyOnThisThread(within: duration, every: .milliseconds(10)) { stopping.load(ordering: .relaxed) }
    }

    /// Sends every byte; false if the client went away first.
    @discardableResult
    private func sendAll(_ bytes: [UInt8], on connection: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: a client that went away must not kill the test process with SIGPIPE.
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }
}

public struct SocketError: Error {
    public let call: String
    public let code = errno
}

/// A TCP socket bound to an ephemeral port on 127.0.0.1. Until it listens, connections to the
/// port are refused, and holding it keeps anyone else from taking the port.
public func bindLoopback() throws -> (socket: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw SocketError(call: "socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
        }
    }
    guard bound else {
        close(socket)
        throw SocketError(call: "bind")
    }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}

/// A TCP socket connected to 127.0.0.1:`port`.
public func connectLoopback(_ port: Int) throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw SocketError(call: "socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else {
        close(socket)
        throw SocketError(call: "connect")
    }
    return socket
}

/// A socket listening on 127.0.0.1 at a free port, and the port.
public func listenOnLoopback() throws -> (socket: Int32, port: Int) {
    let (socket, port) = try bindLoopback()
    guard listen(socket, 128) == 0 else {
        close(socket)
        throw SocketError(call: "listen")
    }
    return (socket, port)
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
