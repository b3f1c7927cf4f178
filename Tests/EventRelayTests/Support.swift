import EventRelay
import Foundation
import Ledger
import PostgresClient
import RedisClient
import Synchronization
import TestSupport

/// One test's world: a migrated database and a Redis key prefix of its own, both removed afterwards.
struct World: Sendable {
    let database: TestDatabase
    /// A hash-tagged prefix no other test uses, e.g. "{rfr_123}".
    let prefix: String

    var streamKey: String { "\(prefix):events" }

    /// Runs `body` on a thread of its own in a new world.
    static func with<T: Sendable>(_ body: @escaping @Sendable (World) throws -> T) async throws -> T {
        try await TestDatabase.with { database in
            try await onOwnThread {
                let world = World(database: database, prefix: "{\(uniqueName("rfr"))}")
                try Migrator.migrate(database.connect())
                defer { _ = try? world.redis().command("DEL", world.streamKey) }
                return try body(world)
            }
        }
    }

    func connect() throws -> PostgresConnection { try database.connect() }

    func redis() throws -> RedisConnection { try RedisConnection(RedisConfiguration(url: TestServers.redisURL)) }

    func relay(_ adjust: (inout RelayConfiguration) -> Void = { _ in }) throws -> OutboxRelay {
        var configuration = RelayConfiguration(keyPrefix: prefix)
        adjust(&configuration)
        return try OutboxRelay(database: connect(), redis: redis(), configuration: configuration)
    }
}

/// Inserts `count` subscriptions and returns their ids in order. Their original transaction ids
/// count on from those already there: "otid-1", "otid-2"… in a new database.
func insertSubscriptions(_ count: Int, on database: PostgresConnection) throws -> [Int64] {
    try database.query(
        """
        INSERT INTO subscriptions (original_transaction_id)
        SELECT 'otid-' || (n + (SELECT count(*) FROM subscriptions))
        FROM generate_series(1, $1::integer) AS n ORDER BY n RETURNING id
        """, [.int64(Int64(count))]
    ).map { try $0["id"].int64() ?? 0 }
}

/// Inserts one event of `subscription` and returns its id.
@discardableResult
func insertEvent(
    _ subscription: Int64, type: String = "renewed", payload: String = #"{"transaction_id": "1002"}"#,
    occurredAt: Date = Date(timeIntervalSince1970: 1_706_745_600.123), on database: PostgresConnection
) throws -> String {
    try firstRow(of: database.query(
        """
        INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
        SELECT gen_random_uuid(), id, original_transaction_id, $2, $3::jsonb, $4 FROM subscriptions WHERE id = $1
        RETURNING id::text AS id
        """, [.int64(subscription), .text(type), .text(payload), .timestamptz(occurredAt)]
    ), "the inserted event")["id"].text() ?? ""
}

/// One entry of a Redis stream.
struct StreamEntry: Sendable {
    let id: String
    let fields: [String: String]
}

/// Every entry of the stream at `key`, oldest first.
func streamEntries(_ key: String, on redis: RedisConnection) throws -> [StreamEntry] {
    try redis.command("XRANGE", key, "-", "+").array?.map { entry in
        guard let parts = entry.array, parts.count == 2, let id = parts[0].string, let flat = parts[1].array else {
            throw StreamReadError(entry: "\(entry)")
        }
        var fields: [String: String] = [:]
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            fields[flat[index].string ?? ""] = flat[index + 1].string
        }
        return StreamEntry(id: id, fields: fields)
    } ?? []
}

struct StreamReadError: Error {
    let entry: String
}

/// A clock the test moves by hand, for the webhook dispatcher's `now`. It starts a minute ahead,
/// so that deliveries the database stamped in the meantime are due, and on a whole second, so that
/// HTTP dates (whole seconds) relative to it are exact.
final class TestClock {
    var now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 60).rounded(.down))
}

/// The first row, or an error saying what is missing: a crash would end every suite in the process.
func firstRow(of rows: [PostgresRow], _ what: String) throws -> PostgresRow {
    guard let row = rows.first else { throw MissingRow(what: what) }
    return row
}

struct MissingRow: Error {
    let what: String
}

/// The delivery's state, attempts and next attempt, as stored.
func delivery(_ id: Int64, on database: PostgresConnection) throws -> (state: String, attempts: Int64, nextAttemptAt: Date) {
    let row = try firstRow(of: database.query(
        "SELECT state, attempts, next_attempt_at FROM webhook_deliveries WHERE id = $1", [.int64(id)]), "delivery \(id)")
    return (try row["state"].text() ?? "", try row["attempts"].int64() ?? -1, try row["next_attempt_at"].timestamptz() ?? .distantPast)
}

/// Messages gathered from several threads.
final class Recorder: Sendable {
    private let messages = Mutex<[String]>([])

    func record(_ message: String) { messages.withLock { $0.append(message) } }

    var all: [String] { messages.withLock { $0 } }
}
