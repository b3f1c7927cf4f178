import AppStore
import Foundation
import Ledger
import PostgresClient
import TestSupport

/// Runs `body` on a thread of its own with a ledger over a new, migrated database of its own.
func withLedger<T: Sendable>(_ body: @escaping @Sendable (Ledger, TestDatabase) throws -> T) async throws -> T {
    try await TestDatabase.with { database in
        try await onOwnThread {
            let connection = try database.connect()
            try migrateForTest(connection)
            return try body(Ledger(connection), database)
        }
    }
}

/// Migrates a test database, with autovacuum off on the tables the tests fill: an autovacuum
/// worker in the database would make TestDatabase's `DROP DATABASE … WITH (FORCE)` fail, since a
/// role that is not a superuser may not end it.
func migrateForTest(_ connection: PostgresConnection) throws {
    try Migrator.migrate(connection)
    try connection.runScript("""
        ALTER TABLE subscriptions SET (autovacuum_enabled = false, toast.autovacuum_enabled = false);
        ALTER TABLE receipts SET (autovacuum_enabled = false, toast.autovacuum_enabled = false);
        ALTER TABLE transactions SET (autovacuum_enabled = false);
        ALTER TABLE verifications SET (autovacuum_enabled = false);
        ALTER TABLE events SET (autovacuum_enabled = false, toast.autovacuum_enabled = false);
        ALTER TABLE purchases SET (autovacuum_enabled = false);
        """)
}

extension Ledger {
    /// Adds subscriptions with these original_transaction_ids (receipt "receipt-of-ID") and loads them.
    func seed(_ ids: [String]) throws -> [LoadedSubscription] {
        try addSubscriptions(ids.map {
            NewSubscription(originalTransactionID: $0, receipt: ReceiptData(base64: "receipt-of-\($0)"))
        })
        let rows = try connection.query(
            "SELECT id FROM subscriptions WHERE original_transaction_id = ANY($1::text[]) ORDER BY id",
            [.text("{" + ids.joined(separator: ",") + "}")])
        return try loadForVerification(ids: rows.map { try $0["id"].int64() ?? 0 })
    }

    /// Seeds one subscription and stores its first analysis (January paid): the baseline later
    /// verifications compare with.
    func seedVerified(_ id: String) throws -> LoadedSubscription {
        let new = try seed([id])[0]
        _ = try persist(Scenario.write(new, Scenario.response(Scenario.months(id, 1)), at: Scenario.day(1, 10)),
                        nextNightlyRun: Scenario.nightlyRun)
        return try reload(new)
    }

    func reload(_ subscription: LoadedSubscription) throws -> LoadedSubscription {
        try loadForVerification(ids: [subscription.id])[0]
    }

    /// The number of rows of `table` for one subscription.
    func count(_ table: StaticString, of subscription: LoadedSubscription) throws -> Int {
        Int(try connection.query(
            "SELECT count(*) AS n FROM \(table) WHERE subscription_id = $1", [.int64(subscription.id)]
        )[0]["n"].int64() ?? -1)
    }

    /// One value of a subscription's row, in its text form.
    func column(_ name: StaticString, of subscription: LoadedSubscription) throws -> String? {
        try connection.query("SELECT \(name)::text AS value FROM subscriptions WHERE id = $1", [.int64(subscription.id)])
            .first?["value"].text()
    }
}

extension WriteOutcome {
    /// The version written, or nil for any other outcome.
    var writtenVersion: Int64? {
        if case .written(let version) = self { version } else { nil }
    }

    var isStale: Bool {
        if case .stale = self { true } else { false }
    }

    var isMissing: Bool {
        if case .missing = self { true } else { false }
    }
}
