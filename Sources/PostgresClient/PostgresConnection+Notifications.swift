import CLibpq
import Foundation

/// A message sent with `NOTIFY channel, 'payload'` or `SELECT pg_notify($1, $2)`.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The server process of the session that sent it.
    public let senderPID: Int32
}

extension PostgresConnection {
    /// Subscribes this session to `channel` (any name; it is quoted as an identifier). The
    /// subscription is renewed after a reconnect, but notifications sent while disconnected are lost,
    /// so a listener should also look for work it may have missed.
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(try quotedIdentifier(channel))")
        if !listenedChannels.contains(channel) { listenedChannels.append(channel) }
    }

    /// Returns the notifications that have arrived, waiting up to `timeout` for the first one;
    /// empty if none came in time. Notifications are only delivered outside transactions.
    public func waitForNotifications(timeout: Duration) throws -> [PostgresNotification] {
        try reconnectIfLost()
        let deadline = ContinuousClock.now + timeout
        while true {
            guard PQconsumeInput(handle) == 1 else { throw failure(from: nil) }
            let arrived = takeNotifications()
            let remaining = deadline - .now
            if !arrived.isEmpty || remaining <= .zero { return arrived }
            try waitUntilReadable(within: remaining)
        }
    }

    /// The notifications libpq has read from the socket (during this call or an earlier statement).
    private func takeNotifications() -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            notifications.append(PostgresNotification(
                channel: String(cString: notify.pointee.relname),
                payload: String(cString: notify.pointee.extra),
                senderPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return notifications
    }

    /// Blocks until the server sends something or `timeout` passes.
    private func waitUntilReadable(within timeout: Duration) throws {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        var socket = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        if poll(&socket, 1, Int32(clamping: milliseconds)) < 0, errno != EINTR {
            let reason = String(cString: strerror(errno))
            throw PostgresError(kind: .connectionLost, message: "waiting on the connection's socket failed: \(reason)")
        }
    }
}
