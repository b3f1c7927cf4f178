import Foundation
@testable import Ledger
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

    /// Migration 22 makes each run recorded before a night of one pass, its figures kept; a new
    /// pass of that night is its second.
    @Test func aRunRecordedBeforePassesIsANightOfOnePass() async throws {
        let (nights, next) = try await TestDatabase.with { database in try await onOwnThread {
            let connection = try database.connect()
            try Migrator.migrate(connection, through: 21)
            try connection.execute("""
                INSERT INTO scheduler_runs (run_id, started_at, due, enqueued, verified, dead, last_settled_at, finished_at, apple_calls, events)
                VALUES ('2026-11-20', '2026-11-20 02:00:00+00', 1800, 1785, 1659, 126, '2026-11-20 03:30:00+00', '2026-11-20 03:30:00+00', 1900, 310),
                       ('2026-11-21', '2026-11-21 02:00:00+00', 572, 572, 400, 0, '2026-11-21 02:10:00+00', NULL, 420, 12)
                """)
            try Migrator.migrate(connection)
            let ledger = Ledger(connection)
            return (try ledger.schedulerNights(limit: 10), try ledger.nextSchedulerPass(night: "2026-11-21"))
        } }
        let at = { (text: String) in try #require(ISO8601DateFormatter().date(from: text)) }
        #expect(nights.map(\.night) == ["2026-11-21", "2026-11-20"])
        #expect(nights.map { $0.passes.map(\.passID) } == [["2026-11-21"], ["2026-11-20"]], "the jobs' and tallies' run id stays")
        let finished = try #require(nights.last)
        #expect((finished.appleCalls, finished.events, finished.countedTo) == (1_900, 310, try at("2026-11-20T03:30:00Z")))
        #expect(finished.passes == [SchedulerPassRecord(
            passID: "2026-11-20", night: "2026-11-20", pass: 1,
            figures: SchedulerPassFigures(
                startedAt: try at("2026-11-20T02:00:00Z"), due: 1_800, enqueued: 1_785, verified: 1_659, dead: 126, replayed: 0,
                toGo: 0, finishedAt: try at("2026-11-20T03:30:00Z"), appleCalls: 1_900, events: 310),
            lastSettledAt: try at("2026-11-20T03:30:00Z"))])
        let settling = try #require(nights.first?.passes.first)
        #expect(settling.pass == 1 && settling.figures.finishedAt == nil && settling.figures.verified == 400)
        #expect(next == 2)
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
