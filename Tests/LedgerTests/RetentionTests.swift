import Foundation
import Ledger
import PostgresClient
import TestSupport
import Testing

/// Retention: `prune` deletes exactly what the policy no longer keeps, walking each table in small
/// batches, and leaves what is still needed (unpublished events, pending deliveries, recent rows,
/// receipts of subscriptions that may still renew).
@Suite struct RetentionTests {
    typealias S = Scenario
    static let now = Date()
    static func daysAgo(_ days: Double) -> PostgresValue { .timestamptz(now.addingTimeInterval(-days * 86_400)) }

    static func count(_ ledger: Ledger, _ sql: String) throws -> Int {
        Int(try ledger.connection.query("SELECT count(*) AS n FROM \(sql)")[0]["n"].int64() ?? -1)
    }

    /// Subscriptions 5001 (active), 5002 (expired 500 days ago, verifyReceipt), 5003 (expired 500
    /// days ago, Server API), 5004 (expired 10 days ago); each with attempts 200 and 10 days old;
    /// events old and new, published or not; deliveries ended or pending, old and new.
    static func history(_ ledger: Ledger) throws -> [Int64] {
        let ids = try ledger.seed(["5001", "5002", "5003", "5004"]).map(\.id)
        let c = ledger.connection
        for (id, expiredDaysAgo) in zip(ids[1...], [500.0, 500, 10]) {
            try c.execute("UPDATE subscriptions SET status = 'expired', expires_at = $2 WHERE id = $1", [.int64(id), daysAgo(expiredDaysAgo)])
        }
        try c.execute("UPDATE subscriptions SET backend = 'server_api' WHERE id = $1", [.int64(ids[2])])
        for id in ids {
            for age in [200.0, 10] {
                try c.execute("INSERT INTO verifications (subscription_id, attempted_at, outcome) VALUES ($1, $2, 'verified')",
                              [.int64(id), daysAgo(age)])
            }
        }
        // Scheduler nights 200 and 10 days ago.
        for age in [200.0, 10] {
            try ledger.beginSchedulerPass(
                passID: "run-\(Int(age))/1", night: "run-\(Int(age))", pass: 1, startedAt: Date(timeIntervalSinceNow: -age * 86_400))
        }
        // Events: (age, published, delivery state or nil).
        let events: [(Double, Bool, String?)] = [
            (500, true, "delivered"), (500, true, "failed"), (500, true, "pending"), (500, false, nil), (500, true, nil),
            (10, true, "delivered"),
        ]
        let endpoint = try c.query(
            "INSERT INTO webhook_endpoints (url, secret) VALUES ('https://hooks.example.com/rf', 'whsec_test') RETURNING id")[0]["id"].int64() ?? 0
        for (age, published, delivery) in events {
            let event = try c.query("""
                INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at, created_at, published_at)
                VALUES (gen_random_uuid(), $1, '5001', 'renewed', '{}', $2, $2, CASE WHEN $3 THEN $2::timestamptz END) RETURNING id::text
                """, [.int64(ids[0]), daysAgo(age), .bool(published)])[0]["id"].text() ?? ""
            guard let delivery else { continue }
            let deliveryID = try c.query("""
                INSERT INTO webhook_deliveries (endpoint_id, event_id, state, created_at, delivered_at)
                VALUES ($1, $2::uuid, $3, $4, CASE WHEN $3 = 'delivered' THEN $4::timestamptz END) RETURNING id
                """, [.int64(endpoint), .text(event), .text(delivery), daysAgo(age)])[0]["id"].int64() ?? 0
            try c.execute("INSERT INTO webhook_attempts (delivery_id, attempted_at) VALUES ($1, $2)", [.int64(deliveryID), daysAgo(age)])
        }
        return ids
    }

    @Test func pruneDeletesExactlyWhatThePolicyNoLongerKeeps() async throws {
        try await withLedger { ledger, _ in
            let ids = try Self.history(ledger)
            var totals: [Int] = []
            // Batches of 2: every walk crosses several pages.
            let pruned = try ledger.prune(RetentionPolicy(), defaultBackend: .verifyReceipt, now: Self.now, batchSize: 2) {
                totals.append($0.total)
            }
            #expect(pruned.verifications == 4, "the 200-day-old attempt of each subscription")
            #expect(try Self.count(ledger, "verifications WHERE attempted_at < now() - interval '100 days'") == 0)
            #expect(try Self.count(ledger, "verifications") == 4)
            #expect(pruned.nights == 1, "the night 200 days ago goes with its verifications")
            #expect(try ledger.schedulerNights(limit: 10).map { [$0.night] + $0.passes.map(\.passID) } == [["run-10", "run-10/1"]])
            #expect(try Self.count(ledger, "scheduler_passes") == 1, "its pass goes with it")
            // Old, published, no delivery pending: the delivered, the failed and the undelivered one.
            #expect(pruned.events == 3)
            #expect(try Self.count(ledger, "events WHERE created_at < now() - interval '400 days'") == 2,
                    "the unpublished one and the one a webhook still waits for")
            #expect(pruned.webhookDeliveries == 2, "old and ended: delivered, failed")
            #expect(try Self.count(ledger, "webhook_deliveries") == 2, "the pending one and the recent one")
            #expect(pruned.webhookAttempts == 1, "the pending delivery's old attempt")
            #expect(try Self.count(ledger, "webhook_attempts") == 1)
            #expect(pruned.receipts == 2, "the two subscriptions expired 500 days ago")
            #expect(try Self.count(ledger, "receipts") == 2)
            func scheduled(_ id: Int64) throws -> Bool {
                try ledger.connection.query("SELECT next_check_at IS NOT NULL AS due FROM subscriptions WHERE id = $1",
                                            [.int64(id)])[0]["due"].bool() == true
            }
            #expect(try !scheduled(ids[1]), "verifyReceipt cannot check it without a receipt")
            #expect(try scheduled(ids[2]), "the Server API needs none")
            #expect(try scheduled(ids[3]), "expired recently: its receipt stays")
            #expect(pruned.batches > 8 && totals.last == pruned.total && totals == totals.sorted())

            // Again: nothing more to delete.
            #expect(try ledger.prune(RetentionPolicy(), defaultBackend: .verifyReceipt, now: Self.now, batchSize: 2).total == 0)
        }
    }

    @Test func anEmptyPolicyKeepsEverything() async throws {
        try await withLedger { ledger, _ in
            _ = try Self.history(ledger)
            let keepAll = RetentionPolicy(verifications: nil, events: nil, webhookLogs: nil, expiredReceipts: nil)
            let pruned = try ledger.prune(keepAll, defaultBackend: .verifyReceipt, now: Self.now)
            #expect(pruned == Pruned())
            #expect(try Self.count(ledger, "verifications") == 8 && Self.count(ledger, "events") == 6 && Self.count(ledger, "receipts") == 4)
        }
    }
}
