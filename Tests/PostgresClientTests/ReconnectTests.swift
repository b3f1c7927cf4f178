import PostgresClient
import TestSupport
import Testing

@Suite struct ReconnectTests {
    /// Documented behaviour: the first call after the server drops the session throws
    /// `connectionLost` (it is never retried), and the call after that reconnects and works.
    @Test func aTerminatedSessionFailsOnceThenReconnects() async throws {
        let (before, failed, after, sessions) = try await onOwnThread {
            let connection = try connect()
            let before = connection.backendPID
            try terminate(before)
            let failed = Result { try connection.query("SELECT 1 AS one") }
            let after = try connection.query("SELECT pg_backend_pid() AS pid")[0]["pid"].int64()
            let sessions = try connection.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1::int", [
                .int64(Int64(before))
            ])[0]["n"].int64()
            return (before, failed, after, sessions)
        }
        let error = try #require(throws: PostgresError.self) { try failed.get() }
        #expect(error.kind == .connectionLost)
        #expect(error.message.contains("terminating connection due to administrator command"))  // the server's reason
        #expect(error.description.contains("next call reconnects"))
        #expect(after != nil && after != Int64(before))  // a new server process
        #expect(sessions == 0)
    }

    @Test func aSessionLostInsideATransactionIsReportedAndTheNextTransactionWorks() async throws {
        let (failed, committed) = try await onOwnThread {
            let connection = try connect()
            let failed = Result {
                try connection.transaction { transaction in
                    try terminate(transaction.backendPID)
                    try transaction.execute("SELECT 1")
                }
            }
            let committed = try connection.transaction { try $0.query("SELECT 5 AS n")[0]["n"].int64() }
            return (failed, committed)
        }
        let error = try #require(throws: PostgresError.self) { try failed.get() }
        #expect(error.kind == .connectionLost)
        #expect(committed == 5)
    }

    @Test func listeningIsRenewedAfterAReconnect() async throws {
        let channel = uniqueName("renewed")
        let received = try await onOwnThread {
            let listener = try connect()
            try listener.listen(channel)
            try terminate(listener.backendPID)
            _ = try? listener.query("SELECT 1")  // notices the loss
            _ = try listener.waitForNotifications(timeout: .zero)  // reconnects and listens again
            try connect().query("SELECT pg_notify($1, $2)", [.text(channel), "after the reconnect"])
            return try listener.waitForNotifications(timeout: .seconds(5)).map(\.payload)
        }
        #expect(received == ["after the reconnect"])
    }
}

/// Ends a server session from another one, and waits (up to 5 s) until it is gone.
func terminate(_ pid: Int32) throws {
    let terminated = try connect().query("SELECT pg_terminate_backend($1::int, 5000) AS ok", [.int64(Int64(pid))])
    guard try terminated[0]["ok"].bool() == true else { throw StillRunning(pid: pid) }
}

struct StillRunning: Error {
    var pid: Int32
}
