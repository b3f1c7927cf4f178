import Lanes

/// At most `size` connections for async code, each owned by a thread of its own, so the blocking
/// libpq calls never run on Swift's cooperative pool. Connections open on first use; a lost one
/// reconnects on its next call. Call `shutdown()` when done, to close them.
///
///     let pool = PostgresPool(configuration: config, size: 4)
///     let count = try await pool.withConnection { connection in
///         try connection.query("SELECT count(*) AS n FROM users")[0]["n"].int64()
///     }
public final class PostgresPool: Sendable {
    private let lanes: LanePool<PostgresConnection>

    public init(configuration: PostgresConfiguration, size: Int) {
        lanes = LanePool(name: "postgres", size: size) { try PostgresConnection(configuration: configuration) }
    }

    /// The most connections this pool opens.
    public var size: Int { lanes.size }

    /// Runs `body` with a connection on that connection's thread and returns its result; waits while
    /// all connections are busy. A body that leaves a transaction open (a bare BEGIN) gets it rolled
    /// back, so the next user starts clean, and an error if it had not thrown one itself.
    @discardableResult
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await lanes.run { connection in
            let result = Result { try body(connection) }
            if connection.rollBackOpenTransaction(), case .success = result {
                throw PostgresError(
                    kind: .misuse,
                    message: "withConnection's body left a transaction open; it was rolled back. "
                        + "Use connection.transaction { } to commit")
            }
            return try result.get()
        }
    }

    /// Lets queued work finish, then closes every connection. Later calls throw.
    public func shutdown() {
        lanes.shutdown()
    }
}
