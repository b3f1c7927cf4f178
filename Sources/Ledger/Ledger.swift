import AppStore
import Foundation
import PostgresClient

/// The fleet's record of subscriptions in PostgreSQL: narrow, named operations over one connection.
///
///     let ledger = Ledger(connection)
///     let page = try ledger.dueSubscriptions(now: .now, limit: 1000)
///     let loaded = try ledger.loadForVerification(ids: page.ids)
///     // … verify with Apple, analyse …
///     let outcomes = try ledger.persist(writes, nextNightlyRun: tonight)
///
/// Like its connection, a ledger belongs to the one thread that uses it. Each call runs its own
/// statement or transaction, so do not call it inside `connection.transaction { }`.
/// docs/ledger.md describes the tables and the rules.
public struct Ledger {
    public let connection: PostgresConnection
    /// Sets `next_check_at` on every write of a new state.
    public var schedule: CheckSchedule

    public init(_ connection: PostgresConnection, schedule: CheckSchedule = CheckSchedule()) {
        self.connection = connection
        self.schedule = schedule
    }
}

/// What the ledger could not make sense of.
public enum LedgerError: Error, Sendable, CustomStringConvertible {
    /// The `state` column holds JSON this binary cannot read (written by a newer one, or by hand).
    case unreadableState(subscriptionID: Int64, reason: String)

    public var description: String {
        switch self {
        case .unreadableState(let id, let reason):
            "the stored state of subscription \(id) cannot be read (\(reason)); it was written by a newer "
                + "receiptfleet or edited by hand: run the newer version, or set the column to NULL to start over"
        }
    }
}

// Helpers shared by the operations.
extension Ledger {
    /// A list of ids as one `bigint[]` parameter (`$1::bigint[]`).
    static func idArray(_ ids: [Int64]) -> PostgresValue {
        .text("{" + ids.map(String.init).joined(separator: ",") + "}")
    }

    /// One `jsonb` parameter holding many rows, for `jsonb_to_recordset`.
    static func jsonb(_ value: some Encodable) throws -> PostgresValue {
        .jsonb(Data(try JSONStreamEncoder.encode(value)))
    }

    /// Reads a `state` column.
    static func decodeState(_ cell: PostgresCell, subscriptionID: Int64) throws -> SubscriptionState? {
        guard let json = try cell.jsonb() else { return nil }
        do {
            return try JSONDecoder().decode(SubscriptionState.self, from: json)
        } catch {
            throw LedgerError.unreadableState(subscriptionID: subscriptionID, reason: "\(error)")
        }
    }
}
