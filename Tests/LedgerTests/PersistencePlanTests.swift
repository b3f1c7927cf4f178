import AppStore
import Foundation
@testable import Ledger
import PostgresClient
import Testing

/// How PostgreSQL runs the one write statement, not only what it writes.
@Suite struct PersistencePlanTests {
    typealias S = Scenario

    /// PostgreSQL guesses 100 rows for `jsonb_to_recordset`; against a few thousand subscriptions
    /// that made it hash the batch and scan the whole table for 8 rows, a cost that grew with the
    /// table. The batch's ids, passed as an array it can count, keep it on the primary key.
    @Test func aBatchReadsItsSubscriptionsByKeyHoweverManyThereAre() async throws {
        let plan = try await withLedger { ledger, _ in
            let subscriptions = try ledger.seed((1...3_000).map { String(70_000 + $0) })
            try ledger.connection.execute("ANALYZE subscriptions")
            let writes = try subscriptions.prefix(8).map {
                try S.write($0, S.response(S.months($0.originalTransactionID, 1)), at: S.day(1, 10))
            }
            let parameters = try PersistenceStatement.parameters(writes, schedule: ledger.schedule, nextNightlyRun: S.nightlyRun)
            return try ledger.connection.query("EXPLAIN " + PersistenceStatement.sql, parameters).map { try $0["QUERY PLAN"].text() ?? "" }
        }
        #expect(!plan.isEmpty)
        #expect(!plan.contains { $0.contains("Seq Scan on subscriptions") }, "\(plan.joined(separator: "\n"))")
    }
}
