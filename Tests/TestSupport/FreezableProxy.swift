import Foundation
import Synchronization

/// A TCP relay on 127.0.0.1 in front of a real server, which a test can freeze as if the server had
/// been stopped with SIGSTOP: the kernel still accepts connections and takes the bytes, but nothing
/// passes either way. Thawed, everything held back goes through, in order. So a test can freeze
/// the shared servers' traffic without touching the servers. It can also reset a connection as soon
/// as the client has spoken (`resetNextConnection`): in front of a TLS server, a handshake broken
/// off on the way. One thread accepts; each connection gets a thread that relays both ways.
public final class FreezableProxy: Sendable {
    public let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private let frozen = Atomic<Bool>(false)
    /// Counts `freeze` calls, so that a late automatic thaw leaves a newer freeze alone.
    private let freezes = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let resetsPending = Atomic<Int>(0)
    /// How long each of the server's replies is held before it is passed on, in µs (0: not held).
    private let replyHold = Atomic<Int>(0)
    private let resetsDone = Atomic<Int>(0)
    private let threads = DispatchGroup()

    /// Connections reset so far.
    public var resetConnections: Int { resetsDone.load(ordering: .relaxed) }

    /// Relays to the server on 127.0.0.1:`upstreamPort`.
    public init(forwardingTo upstreamPort: Int) throws {
        (listener, port) = try listenOnLoopback()
        self.upstreamPort = upstreamPort
        threads.enter()
        Thread { [self] in
            acceptConnections()
            threads.leave()
        }.start()
    }

    /// From now on nothing passes, and new connections wait in the kernel's backlog, until `thaw()`
    /// or at the latest `limit` later: a client call that never gives up then returns late, and its
    /// test fails on a time bound instead of hanging the run.
    public func freeze(forAtMost limit: Duration) {
        let freeze = freezes.add(1, ordering: .relaxed).newValue
        frozen.store(true, ordering: .relaxed)
        let (seconds, attoseconds) = limit.components
        DispatchQueue.global().asyncAfter(deadline: .now() + Double(seconds) + Double(attoseconds) / 1e18) { [self] in
            if freezes.load(ordering: .relaxed) == freeze { thaw() }
        }
    }

    public func thaw() { frozen.store(false, ordering: .relaxed) }

    /// Holds each reply of the server `delay` before passing it on (`.zero`: no longer), while
    /// requests pass at once: as if the client read its replies that much late.
    public func holdReplies(for delay: Duration) { replyHold.store(Int(delay / .microseconds(1)), ordering: .relaxed) }

    /// The next connection gets a TCP reset once the client's first bytes (a TLS ClientHello, say)
    /// arrive, and those bytes never reach the server.
    public func resetNextConnection() { resetsPending.add(1, ordering: .relaxed) }

    /// Ends every connection and waits for all the proxy's threads.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        threads.wait()
        close(listener)
    }

    private func acceptConnections() {
        while !stopping.load(ordering: .relaxed) {
            guard readable(listener) else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            if resetsPending.load(ordering: .relaxed) > 0 {
                resetsPending.subtract(1, ordering: .relaxed)
                reset(client)
                continue
            }
            guard let server = try? connectLoopback(upstreamPort) else {
                close(client)
                continue
            }
            threads.enter()
            Thread { [self] in
                relay(client, server)
                close(client)
                close(server)
                threads.leave()
            }.start()
        }
    }

    /// Copies whatever either side sends to the other, while not frozen, until one side closes.
    private func relay(_ client: Int32, _ server: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopping.load(ordering: .relaxed) {
            for (from, to) in [(client, server), (server, client)] {
                guard readable(from, within: 5) else { continue }
                let count = read(from, &buffer, buffer.count)
                let hold = replyHold.load(ordering: .relaxed)
                // Real time: a slow server is what the client under test must wait for.
                if from == server, hold > 0 { Thread.sleep(forTimeInterval: Double(hold) / 1e6) }
                guard count > 0, sendAll(buffer[..<count], to) else { return }
            }
        }
    }

    /// Waits up to `milliseconds` for `socket` to be readable; sleeps instead while frozen, so a
    /// frozen proxy never reads.
    private func readable(_ socket: Int32, within milliseconds: Int32 = 50) -> Bool {
        if frozen.load(ordering: .relaxed) {
            // Real time: a frozen server is what the client under test must time out on.
            Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            return false
        }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0 && !frozen.load(ordering: .relaxed)
    }

    /// Waits for the client's first bytes, then closes with RST: lingering for zero seconds makes
    /// close() send RST instead of FIN.
    private func reset(_ client: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        if readable(client, within: 5_000) { _ = read(client, &buffer, buffer.count) }
        var reset = linger(l_onoff: 1, l_linger: 0)
        setsockopt(client, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
        close(client)
        resetsDone.add(1, ordering: .relaxed)
    }

    private func sendAll(_ bytes: ArraySlice<UInt8>, _ socket: Int32) -> Bool {
        var sent = bytes.startIndex
        while sent < bytes.endIndex {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }
}

extension FreezableProxy {
    /// A proxy in front of the shared test Redis, to freeze one test's Redis without the others'.
    public static func forTestRedis() throws -> FreezableProxy {
        guard let port = URLComponents(string: TestServers.redisURL)?.port else { throw TestRedisHasNoPort() }
        return try FreezableProxy(forwardingTo: port)
    }

    struct TestRedisHasNoPort: Error {}

    /// `url`, a URL of the server behind the proxy, going through the proxy instead.
    public func carrying(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.port = port
        return components.string ?? url
    }
}
