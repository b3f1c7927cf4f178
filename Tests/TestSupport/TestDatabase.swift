import Foundation
import PostgresClient

/// A PostgreSQL database of its own for one test, created empty on the test server and dropped
/// at the end, so tests that migrate or fill a schema never see each other.
public struct TestDatabase: Sendable {
    public let name: String
    public let url: String

    /// Runs `body` with a new empty database and drops the database afterwards, also when `body` throws.
    public static func with<T: Sendable>(_ body: (TestDatabase) async throws -> T) async throws -> T {
        let database = try await create()
        do {
            let result = try await body(database)
            try await database.drop()
            return result
        } catch {
            try? await database.drop()
            throw error
        }
    }

    /// Creates an empty database with a unique name.
    ///
    /// A whole test run starts at once, and two hundred databases created together held the
    /// server past the clients' 10 s timeout on a slower CI machine: so creations and drops take
    /// turns, and the copy is a file copy (one WAL record) rather than the default page by page
    /// in the WAL (4 MB each).
    public static func create() async throws -> TestDatabase {
        let name = uniqueName("rf_test")
        try await turns.taking {
            try await onOwnThread {
                try PostgresConnection(configuration: PostgresConfiguration(TestServers.postgresURL))
                    .execute("CREATE DATABASE \(name) STRATEGY FILE_COPY")  // a generated identifier, never input
            }
        }
        return TestDatabase(name: name, url: Self.url(of: name))
    }

    private static let turns = Turns(width: 2)

    /// A new connection to this database.
    public func connect() throws -> PostgresConnection {
        try PostgresConnection(configuration: PostgresConfiguration(url))
    }

    /// Drops the database, ending any sessions still in it. FORCE cannot end an autovacuum worker
    /// for a role that is not superuser, so a busy database is tried again a few times.
    public func drop() async throws {
        let name = name
        try await Self.turns.taking { try await onOwnThread {
            let server = try PostgresConnection(configuration: PostgresConfiguration(TestServers.postgresURL))
            var refusal: (any Error)?
            let dropped = eventuallyOnThisThread(within: .seconds(2), every: .milliseconds(200)) {
                do {
                    try server.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                    return true
                } catch {
                    refusal = error
                    return false
                }
            }
            if !dropped, let refusal { throw refusal }
        } }
    }

    /// The server's URL with its database name replaced.
    private static func url(of database: String) -> String {
        let base = TestServers.postgresURL
        guard let slash = base.range(of: "/", options: .backwards) else { return base }
        let query = base[slash.upperBound...].firstIndex(of: "?").map { String(base[$0...]) } ?? ""
        return base[..<slash.upperBound] + database + query
    }
}
