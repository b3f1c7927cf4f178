import PostgresClient

/// One numbered step of the schema.
struct Migration: Sendable {
    let version: Int
    let name: String
    let sql: StaticString
}

/// Brings a database's schema up to the one this binary was built with.
///
/// Each migration runs in its own transaction together with its row in `schema_migrations`, so a
/// failed migration leaves nothing behind. A transaction-scoped advisory lock makes concurrent
/// migrators (several processes starting at once) take turns; the second finds nothing to do.
public enum Migrator {
    /// The schema version this binary expects.
    public static var latestVersion: Int { Migrations.all.last?.version ?? 0 }

    /// Applies every migration the database lacks, in order, and returns the versions applied.
    /// Throws `MigrationError.databaseIsNewer` if the database has a version this binary does not know.
    @discardableResult
    public static func migrate(_ connection: PostgresConnection) throws -> [Int] {
        try migrate(connection, through: latestVersion)
    }

    /// Applies the migrations the database lacks up to version `last` (a test's database as an
    /// older binary left it, to show that a later migration keeps its rows).
    @discardableResult
    static func migrate(_ connection: PostgresConnection, through last: Int) throws -> [Int] {
        var applied: [Int] = []
        for migration in Migrations.all where migration.version <= last {
            let didApply = try connection.transaction { connection in
                // Taken first, so that even creating the bookkeeping table happens one at a time.
                try connection.execute("SELECT pg_advisory_xact_lock($1)", [.int64(advisoryLockKey)])
                try connection.runScript("""
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version     integer PRIMARY KEY,
                        name        text NOT NULL,
                        applied_at  timestamptz NOT NULL DEFAULT now()
                    )
                    """)
                let newest = Int(try connection.query(
                    "SELECT coalesce(max(version), 0) AS version FROM schema_migrations")[0]["version"].int64() ?? 0)
                guard newest <= latestVersion else {
                    throw MigrationError.databaseIsNewer(database: newest, binary: latestVersion)
                }
                guard newest < migration.version else { return false }
                try connection.runScript(migration.sql)
                try connection.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    [.int64(Int64(migration.version)), .text(migration.name)])
                return true
            }
            if didApply { applied.append(migration.version) }
        }
        return applied
    }

    /// Any constant shared by all migrators of this schema: "receiptfleet" in ASCII.
    private static let advisoryLockKey: Int64 = 0x7265_6365_6970_7466
}

public enum MigrationError: Error, CustomStringConvertible {
    case databaseIsNewer(database: Int, binary: Int)

    public var description: String {
        switch self {
        case .databaseIsNewer(let database, let binary):
            "the database schema is at version \(database), newer than this binary's \(binary): "
                + "a newer receiptfleet migrated it. Run that version (or newer) instead; never downgrade."
        }
    }
}
