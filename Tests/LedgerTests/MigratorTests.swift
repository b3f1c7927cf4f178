import Ledger
import PostgresClient
import TestSupport
import Testing

@Suite struct MigratorTests {
    @Test func migratesAnEmptyDatabaseOnceAndRefusesANewerOne() async throws {
        let (first, second, tables, refusal) = try await TestDatabase.with { database in try await onOwnThread {
            let connection = try database.connect()
            let first = try Migrator.migrate(connection)
            let second = try Migrator.migrate(connection)
            let tables = try connection.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
            ).map { try $0["table_name"].text() ?? "" }
            try connection.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, 'from the future')",
                [.int64(Int64(Migrator.latestVersion + 1))])
            let refusal = Result { try Migrator.migrate(connection) }
            return (first, second, tables, refusal)
        } }
        #expect(first == Array(1...Migrator.latestVersion))
        #expect(second.isEmpty)
        #expect(tables.contains("subscriptions") && tables.contains("events") && tables.contains("receipts"))
        guard case .failure(let error as MigrationError) = refusal else {
            Issue.record("a newer database must be refused, got \(refusal)")
            return
        }
        #expect("\(error)".contains("newer than this binary"))
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        let results = try await TestDatabase.with { database in
            try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask { try await onOwnThread { try Migrator.migrate(database.connect()) } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(results.flatMap { $0 }.sorted() == Array(1...Migrator.latestVersion))
    }
}
