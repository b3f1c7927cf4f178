import CLibpq

/// A statement a session parses once and then runs by name. After a few runs PostgreSQL may also
/// keep one generic plan for it, so a hot statement stops paying for parsing and planning on every
/// call (a quarter of the write statement's server time, measured in docs/performance.md).
///
///     static let byID = PreparedStatement(name: "subscription_by_id", sql: "SELECT … WHERE id = $1")
///     let rows = try connection.query(Self.byID, [.int64(id)])
///
/// Names are per session; give each statement its own. A statement's parameter types are fixed by
/// the first call that prepares it, so pass the same types every time (cast in the SQL, `$1::bigint[]`,
/// where a value may be NULL).
public struct PreparedStatement: Sendable {
    public let name: String
    public let sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// What a session knows of its prepared statements.
enum PreparedStatements {
    /// No prepared call yet on this session.
    case unchecked
    /// A pooler (PgBouncer, pgpool) stands between this client and the server: a statement prepared
    /// on one server session may run on another, which does not know it, so every call sends its SQL.
    case pooled
    /// A session of our own with the server, and the names prepared on it.
    case direct(Set<String>)
}

extension PostgresConnection {
    /// Runs a prepared statement and returns its rows (none for statements that return none).
    @discardableResult
    public func query(_ statement: PreparedStatement, _ parameters: [PostgresValue] = []) throws -> [PostgresRow] {
        try run(statement, parameters).rows()
    }

    /// Prepares the statement on first use in this session, then runs it by name; behind a pooler,
    /// sends its SQL as `query(String)` does.
    func run(_ statement: PreparedStatement, _ parameters: [PostgresValue]) throws -> PostgresResult {
        let session = try connectedSession()  // reconnects first, so what is learnt below is this session's
        if case .unchecked = preparedStatements {
            preparedStatements = try talksToTheServerItself(session) ? .direct([]) : .pooled
        }
        guard case .direct(var prepared) = preparedStatements else { return try run(statement.sql, parameters) }
        let encoded = try EncodedParameters(parameters)
        if !prepared.contains(statement.name) {
            _ = try exchange { PQsendPrepare($0, statement.name, statement.sql, Int32(parameters.count), encoded.types) }
            prepared.insert(statement.name)
            preparedStatements = .direct(prepared)
        }
        do {
            return try exchange { session in
                encoded.withValues { values in
                    PQsendQueryPrepared(
                        session, statement.name, Int32(parameters.count), values, encoded.lengths, encoded.formats, 0)
                }
            }
        } catch let error as PostgresError where error.sqlState == "26000" {
            // Someone ran DEALLOCATE on this session: prepare it again next time.
            prepared.remove(statement.name)
            preparedStatements = .direct(prepared)
            throw error
        }
    }

    /// Whether this session is a server session of its own. A pooler answers the connection itself and
    /// hands the client a process id of its own making (for cancel requests), which then differs from
    /// the process id of the server session the statement runs on.
    private func talksToTheServerItself(_ session: OpaquePointer) throws -> Bool {
        let serverPID = try query("SELECT pg_backend_pid() AS pid").first?["pid"].int64()
        return serverPID == Int64(PQbackendPID(session))
    }
}
