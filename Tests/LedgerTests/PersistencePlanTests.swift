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
        let plan = try await plan { ledger, parameters in
            try ledger.connection.query("EXPLAIN " + PersistenceStatement.sql, parameters)
        }
        #expect(!plan.isEmpty)
        #expect(!plan.contains { $0.contains("Seq Scan on subscriptions") }, "\(plan.joined(separator: "\n"))")
    }

    /// The statement is prepared once per session, and after five runs PostgreSQL may keep one
    /// generic plan for it, made without the batch's values: that plan must read by key too.
    @Test func itsGenericPlanReadsByKeyToo() async throws {
        let plan = try await plan { ledger, parameters in
            try ledger.connection.execute("SET plan_cache_mode = force_generic_plan")
            try ledger.connection.execute("PREPARE generic (jsonb, text) AS " + PersistenceStatement.sql)
            // EXECUTE's arguments are SQL literals here: EXPLAIN does not pass on bound parameters' types.
            let literals = try parameters.map { try ledger.connection.query("SELECT quote_literal($1::text) AS q", [$0])[0]["q"].text() ?? "" }
            return try ledger.connection.query("EXPLAIN EXECUTE generic (\(literals.joined(separator: ", ")))")
        }
        #expect(plan.contains { $0.contains("Index Scan using subscriptions_pkey") }, "\(plan.joined(separator: "\n"))")
        #expect(!plan.contains { $0.contains("Seq Scan on subscriptions") }, "\(plan.joined(separator: "\n"))")
    }

    /// The plan `explain` reads for a batch of 8 writes among 3,000 analysed subscriptions.
    private func plan(_ explain: @escaping @Sendable (Ledger, [PostgresValue]) throws -> [PostgresRow]) async throws -> [String] {
        try await withLedger { ledger, _ in
            let subscriptions = try ledger.seed((1...3_000).map { String(70_000 + $0) })
            try ledger.connection.execute("ANALYZE subscriptions")
            let writes = try subscriptions.prefix(8).map {
                try S.write($0, S.response(S.months($0.originalTransactionID, 1)), at: S.day(1, 10))
            }
            let parameters = try PersistenceStatement.parameters(writes, schedule: ledger.schedule, nextNightlyRun: S.nightlyRun)
            return try explain(ledger, parameters).map { try $0["QUERY PLAN"].text() ?? "" }
        }
    }
}
