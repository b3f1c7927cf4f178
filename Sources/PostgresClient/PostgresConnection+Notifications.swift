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
    ///
    /// A frozen server looks the same as a quiet one here: the wait just ends empty, and the next
    /// statement, which has a deadline (`callTimeout`), finds out. A session a timed-out call
    /// abandoned is made again first, listening again on its channels.
    public func waitForNotifications(timeout: Duration) throws -> [PostgresNotification] {
        let session = try connectedSession()
        let deadline = ContinuousClock.now + timeout
        while true {
            guard PQconsumeInput(session) == 1 else { throw failure(from: nil, on: session) }
            let arrived = takeNotifications(from: session)
            if !arrived.isEmpty { return arrived }
            guard try waitForSocket(of: session, Int16(POLLIN), until: deadline) else { return [] }
        }
    }

    /// The notifications libpq has read from the socket (during this call or an earlier statement).
    private func takeNotifications(from session: OpaquePointer) -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(session) {
            notifications.append(PostgresNotification(
                channel: String(cString: notify.pointee.relname),
                payload: String(cString: notify.pointee.extra),
                senderPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return notifications
    }
}
