import CLibpq
import Foundation

/// Every call is one exchange with libpq's asynchronous API, under a client-side deadline.
///
/// The server's own `statement_timeout` cannot help against a server that is stopped (SIGSTOP, a
/// frozen VM): its kernel still accepts the bytes and answers keepalives, and nothing runs to count
/// the time. So the client sends without blocking, then polls the socket until the answer is in or
/// `configuration.callTimeout` has passed.
extension PostgresConnection {
    /// Sends a statement with `send` (a `PQsend…` function), waits for its results and returns the
    /// successful one: for a script of several statements, the last, unless one failed.
    /// - Throws: the server's error; `connectionLost`; `timeout` when the deadline passed first, after
    ///   which the session is abandoned (see `abandon`).
    func exchange(_ send: (OpaquePointer) -> Int32) throws -> PostgresResult {
        let session = try connectedSession()
        let deadline = ContinuousClock.now + configuration.callTimeout
        guard send(session) == 1 else { throw failure(from: nil, on: session) }
        guard try flush(session, until: deadline), try awaitAnswer(session, until: deadline) else {
            throw abandon(session)
        }
        return try collectResult(session)
    }

    /// Pushes the queued statement out; false if the deadline passed first. Reads what the server
    /// sends meanwhile, as libpq asks, so that neither side waits on a full buffer.
    private func flush(_ session: OpaquePointer, until deadline: ContinuousClock.Instant) throws -> Bool {
        while true {
            switch PQflush(session) {
            case 0: return true
            case 1: break
            default: throw failure(from: nil, on: session)
            }
            guard try waitForSocket(of: session, Int16(POLLIN | POLLOUT), until: deadline) else { return false }
            guard PQconsumeInput(session) == 1 else { return true }  // lost: the results report it
        }
    }

    /// Reads until libpq holds the whole answer (or the session broke); false if the deadline passed first.
    private func awaitAnswer(_ session: OpaquePointer, until deadline: ContinuousClock.Instant) throws -> Bool {
        while PQisBusy(session) == 1 {
            guard try waitForSocket(of: session, Int16(POLLIN), until: deadline) else { return false }
            guard PQconsumeInput(session) == 1 else { return true }  // lost: the results report it
        }
        return true
    }

    /// Takes every result of the answer (libpq needs them all taken before the next statement). None
    /// of these calls blocks: the answer is complete, or the session is broken and they fail at once.
    private func collectResult(_ session: OpaquePointer) throws -> PostgresResult {
        var kept: OpaquePointer?
        var failed: OpaquePointer?
        defer { if let failed { PQclear(failed) } }
        while let result = PQgetResult(session) {
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                if let kept { PQclear(kept) }
                kept = result
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                // The session now waits for COPY data: start afresh on the next call.
                PQclear(result)
                if let kept { PQclear(kept) }
                dropSession()
                throw PostgresError(
                    kind: .misuse,
                    message: "COPY is not supported; insert many rows with INSERT … SELECT … FROM jsonb_to_recordset($1)")
            default:
                if failed == nil { failed = result } else { PQclear(result) }
            }
        }
        if let failed {
            if let kept { PQclear(kept) }
            throw failure(from: failed, on: session)
        }
        guard let kept else { throw failure(from: nil, on: session) }
        return PostgresResult(kept)
    }

    /// Gives up on a call the server did not answer in time, and returns the error to throw. The
    /// session is closed at once: a late answer would otherwise be read as the next call's, and the
    /// next call connects again. The server is asked to cancel the statement, from a thread of its
    /// own, because `PQcancel` waits for the server, which may still be frozen. (`PQcancelConn`,
    /// which could be polled, arrived only in libpq 17.) The statement may still take effect.
    func abandon(_ session: OpaquePointer) -> PostgresError {
        let server = Self.serverName(of: session)
        if let cancel = PQgetCancel(session) {
            // A PGcancel is made to be used from another thread; it is handed over, never shared.
            nonisolated(unsafe) let handedOver = cancel
            Thread {
                var reason = [CChar](repeating: 0, count: 256)
                _ = PQcancel(handedOver, &reason, Int32(reason.count))  // best effort: nobody waits for it
                PQfreeCancel(handedOver)
            }.start()
        }
        dropSession()
        return PostgresError(
            kind: .timeout, message: "PostgreSQL at \(server) did not answer within \(configuration.callTimeout)")
    }

    /// Closes the session; the next call connects again. In non-blocking mode, closing never waits.
    func dropSession() {
        if let session { PQfinish(session) }
        session = nil
        preparedStatements = .unchecked
    }

    /// Waits until the session's socket is ready for `events`, or the deadline passes (false).
    func waitForSocket(
        of session: OpaquePointer, _ events: Int16, until deadline: ContinuousClock.Instant
    ) throws -> Bool {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return false }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            var socket = pollfd(fd: PQsocket(session), events: events, revents: 0)
            let ready = poll(&socket, 1, Int32(clamping: milliseconds))
            if ready > 0 { return true }
            if ready < 0, errno != EINTR {
                let reason = String(cString: strerror(errno))
                throw PostgresError(kind: .connectionLost, message: "waiting on the connection's socket failed: \(reason)")
            }
        }
    }

    /// `host:port` of the session, as libpq connected to it (a socket directory for a unix socket).
    private static func serverName(of session: OpaquePointer) -> String {
        let host = PQhost(session).map { String(cString: $0) } ?? "?"
        let port = PQport(session).map { String(cString: $0) } ?? "?"
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
