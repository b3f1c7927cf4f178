import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct PoolTests {
    /// What one task saw from inside `withConnection`.
    struct Visit: Sendable {
        var pid: Int64?
        /// Sessions of this pool's application name open at that moment.
        var sessions: Int64?
        /// The thread the body ran on.
        var thread: String
    }

    @Test func neverOpensMoreThanItsSizeUnderFiftyConcurrentTasks() async throws {
        let applicationName = uniqueName("pool")
        let pool = PostgresPool(configuration: try testConfiguration(applicationName: applicationName), size: 3)
        let visits = try await withThrowingTaskGroup(of: Visit.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try connection.execute("SELECT pg_sleep(0.01)")  // keeps the connections busy together
                        let row = try connection.query(
                            "SELECT pg_backend_pid() AS pid, count(*) AS sessions FROM pg_stat_activity "
                                + "WHERE application_name = $1", [.text(applicationName)])[0]
                        return Visit(
                            pid: try row["pid"].int64(), sessions: try row["sessions"].int64(),
                            thread: String(describing: pthread_self()))
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        pool.shutdown()

        #expect(visits.count == 50)
        #expect(Set(visits.map(\.pid)).count <= 3)
        #expect(visits.allSatisfy { ($0.sessions ?? .max) <= 3 })
        // Each connection lives on one thread of its own: never handed around the cooperative pool.
        let threadsPerConnection = Dictionary(grouping: visits, by: \.pid).mapValues { Set($0.map(\.thread)) }
        #expect(threadsPerConnection.values.allSatisfy { $0.count == 1 })
        #expect(Set(visits.map(\.thread)).count == threadsPerConnection.count)
        #expect(try await sessionsLeft(named: applicationName) == 0)  // shutdown closed them all
    }

    @Test func aBodyThatLeavesATransactionOpenIsRolledBackAndReported() async throws {
        let pool = PostgresPool(configuration: try testConfiguration(), size: 1)
        defer { pool.shutdown() }
        let table = uniqueName("pooled")
        try await pool.withConnection { try $0.execute("CREATE TEMP TABLE \(table) (id int)") }

        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { connection in
                try connection.execute("BEGIN")
                try connection.execute("INSERT INTO \(table) VALUES (1)")
            }
        }
        #expect(error?.kind == .misuse)
        // The same (only) connection, now outside any transaction: the insert is gone.
        let count = try await pool.withConnection { try $0.query("SELECT count(*) AS n FROM \(table)")[0]["n"].int64() }
        #expect(count == 0)
    }

    /// Sessions with this application name, once closing ones have had up to 5 s to go away.
    private func sessionsLeft(named applicationName: String) async throws -> Int64? {
        try await onOwnThread {
            let observer = try connect()
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                let count = try observer.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [.text(applicationName)]
                )[0]["n"].int64()
                if count == 0 || ContinuousClock.now > deadline { return count }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }
}
