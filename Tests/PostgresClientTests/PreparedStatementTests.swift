import PostgresClient
import TestSupport
import Testing

@Suite struct PreparedStatementTests {
    static let double = PreparedStatement(name: "double_it", sql: "SELECT $1::bigint * 2 AS doubled")

    /// On a session of its own the statement is prepared once, then run by name.
    @Test func aStatementIsPreparedOnceAndRunByName() async throws {
        let (answers, prepared) = try await onOwnThread {
            let connection = try connect()
            let answers = try (1...3).map { try connection.query(Self.double, [.int64($0)])[0]["doubled"].int64() }
            let prepared = try connection.query("SELECT name FROM pg_prepared_statements").map { try $0["name"].text() }
            return (answers, prepared)
        }
        #expect(answers == [2, 4, 6])
        #expect(prepared == ["double_it"])
    }

    /// A new session knows none of the old one's statements: the client prepares them again.
    @Test func aReconnectedSessionPreparesAgain() async throws {
        let (failed, after) = try await onOwnThread {
            let connection = try connect()
            _ = try connection.query(Self.double, [.int64(1)])
            try terminate(connection.backendPID)
            let failed = Result { try connection.query(Self.double, [.int64(2)]) }
            let after = try connection.query(Self.double, [.int64(3)])[0]["doubled"].int64()
            return (failed, after)
        }
        #expect(throws: PostgresError.self) { try failed.get() }
        #expect(after == 6)
    }

    /// Behind PgBouncer's transaction pooling, consecutive calls may run on different server sessions,
    /// and a statement prepared on one is unknown on the next ("prepared statement does not exist").
    /// Here another client holds the first server session in a transaction, so the next call must run
    /// on another one; the client noticed the pooler and sends the SQL every time.
    @Test func behindATransactionPoolerEveryCallSendsItsSQL() async throws {
        let answers = try await onOwnThread {
            let viaPooler = { try PostgresConnection(configuration: PostgresConfiguration(TestServers.pgbouncerURL)) }
            let client = try viaPooler()
            let other = try viaPooler()
            var answers = [try client.query(Self.double, [.int64(1)])[0]["doubled"].int64()]
            try other.transaction { other in
                _ = try other.query("SELECT 1")
                answers.append(try client.query(Self.double, [.int64(2)])[0]["doubled"].int64())
            }
            answers.append(try client.query(Self.double, [.int64(3)])[0]["doubled"].int64())
            return answers
        }
        #expect(answers == [2, 4, 6])
    }
}
