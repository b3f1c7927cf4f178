import PostgresClient
import TestSupport
import Testing

@Suite struct TransactionTests {
    struct BodyFailed: Error, Equatable {}

    /// Runs `body` with a connection and a fresh table `<schema>.items (id bigint primary key)`,
    /// visible to other sessions, and drops the schema afterwards.
    func withItemsTable<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection, _ table: String) throws -> T
    ) async throws -> T {
        let schema = uniqueName("tx")
        return try await onOwnThread {
            let connection = try connect()
            try connection.execute("CREATE SCHEMA \(schema)")
            defer { _ = try? connection.execute("DROP SCHEMA \(schema)") }
            try connection.execute("CREATE TABLE \(schema).items (id bigint PRIMARY KEY)")
            defer { _ = try? connection.execute("DROP TABLE \(schema).items") }  // runs first
            return try body(connection, "\(schema).items")
        }
    }

    @Test func aBodyThatThrowsAfterAnInsertLeavesNoRow() async throws {
        let (outcome, count) = try await withItemsTable { connection, table in
            let outcome = Result {
                try connection.transaction { transaction in
                    try transaction.execute("INSERT INTO \(table) (id) VALUES ($1)", [1])
                    throw BodyFailed()
                }
            }
            return (outcome, try connection.query("SELECT count(*) AS n FROM \(table)")[0]["n"].int64())
        }
        #expect(throws: BodyFailed.self) { try outcome.get() }
        #expect(count == 0)
    }

    @Test func aSuccessfulBodyCommitsForEveryoneToSee() async throws {
        let (returned, seenElsewhere) = try await withItemsTable { connection, table in
            let returned = try connection.transaction { transaction in
                try transaction.execute("INSERT INTO \(table) (id) VALUES ($1), ($2)", [1, 2])
            }
            let other = try connect()
            return (returned, try other.query("SELECT count(*) AS n FROM \(table)")[0]["n"].int64())
        }
        #expect(returned == 2)
        #expect(seenElsewhere == 2)
    }

    @Test func transactionsDoNotNest() async throws {
        let (nested, count) = try await withItemsTable { connection, table in
            let nested = Result {
                try connection.transaction { outer in
                    try outer.execute("INSERT INTO \(table) (id) VALUES (1)")
                    try outer.transaction { _ in }
                }
            }
            return (nested, try connection.query("SELECT count(*) AS n FROM \(table)")[0]["n"].int64())
        }
        let error = try #require(throws: PostgresError.self) { try nested.get() }
        #expect(error.kind == .misuse)
        #expect(error.message.contains("do not nest"))
        #expect(count == 0)  // the nesting error rolled back the outer transaction too
    }

    @Test func aFailedStatementWhoseErrorWasCaughtStillRollsBack() async throws {
        let (outcome, count) = try await withItemsTable { connection, table in
            let outcome = Result {
                try connection.transaction { transaction in
                    try transaction.execute("INSERT INTO \(table) (id) VALUES (1)")
                    _ = try? transaction.execute("INSERT INTO \(table) (id) VALUES (1)")  // duplicate, swallowed
                }
            }
            return (outcome, try connection.query("SELECT count(*) AS n FROM \(table)")[0]["n"].int64())
        }
        let error = try #require(throws: PostgresError.self) { try outcome.get() }
        #expect(error.message.contains("rolled back"))
        #expect(count == 0)
    }
}

@Suite struct ScriptTests {
    @Test func aScriptRunsSeveralStatementsAndReportsTheFailingOne() async throws {
        let schema = uniqueName("pc_script")
        let (count, failure) = try await onOwnThread {
            let connection = try PostgresConnection(configuration: testConfiguration())
            try connection.execute("CREATE SCHEMA \(schema)")
            defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
            try connection.execute("SET search_path TO \(schema)")
            try connection.runScript("""
                CREATE TABLE numbers (n integer);
                INSERT INTO numbers VALUES (1), (2);
                INSERT INTO numbers VALUES (3);
                """)
            let count = try connection.query("SELECT count(*) AS n FROM numbers")[0]["n"].int64()
            let failure = Result { try connection.runScript("SELECT 1; SELECT * FROM no_such_table;") }
            return (count, failure)
        }
        #expect(count == 3)
        guard case .failure(let error as PostgresError) = failure else {
            Issue.record("expected the second statement to fail, got \(failure)")
            return
        }
        #expect(error.sqlState == "42P01")
    }
}
