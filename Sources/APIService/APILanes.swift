import Fleet
import Lanes

/// The API's lanes: a `LanePool` of the fleet's connections whose work is refused at once while
/// the database rests (`ServerRest.postgres`): a frozen PostgreSQL holds one call per lane for at
/// most `APIServer.postgresDeadline`, then every request is answered 503 `database_unavailable`
/// without a lane until the rest ends, also the ones already waiting for a lane.
final class APILanes: Sendable {
    private let pool: LanePool<Connections>
    private let database: ServerRest

    init(size: Int, makeConnections: @escaping @Sendable () throws -> Connections) {
        let database = ServerRest.postgres()
        // A lane connects before its first work (and after losing its connections): that waits for the server too.
        pool = LanePool(name: "rf-api", size: size) { try database.guardingOnLane(makeConnections) }
        self.database = database
    }

    /// Runs `body` on the least busy lane with its connections.
    func run<T: Sendable>(_ body: @escaping @Sendable (inout Connections) throws -> T) async throws -> T {
        let database = database
        return try await database.guarding {
            try await pool.run { connections in try database.guardingOnLane { try body(&connections) } }
        }
    }

    /// Finishes queued work and releases every connection.
    func shutdown() { pool.shutdown() }
}
