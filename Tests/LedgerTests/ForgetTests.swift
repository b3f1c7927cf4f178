import Foundation
import Ledger
import Synchronization
import PostgresClient
import TestSupport
import Testing

/// Forgetting a customer: everything of theirs goes in one transaction, one tombstone event per
/// deleted subscription or purchase stays for the consumers, nothing of anyone else's is touched,
/// and a worker writing meanwhile cannot bring any of it back.
@Suite struct ForgetTests {
    typealias S = Scenario

    /// Two subscriptions of acct-1 (renewed once, so they have events, published and delivered to a
    /// webhook), one of acct-2, acct-1's lifetime purchase, a notification, and acct-1's pending
    /// claim on acct-2's subscription. Returns the subscriptions' ids: acct-1's two, then acct-2's.
    static func customers(_ ledger: Ledger) throws -> (mine: [Int64], theirs: Int64) {
        let ids = try ["4001", "4002", "4003"].map { id in
            let baseline = try ledger.seedVerified(id)
            _ = try ledger.persist(S.write(baseline, S.response(S.months(id, 2)), at: S.day(2, 10)), nextNightlyRun: S.nightlyRun)
            return baseline.id
        }
        _ = try ledger.linkAccount("acct-1", to: [ids[0], ids[1]])
        _ = try ledger.linkAccount("acct-2", to: [ids[2]])
        _ = try ledger.recordPurchases(PurchaseTests.write(PurchaseTests.response(), account: "acct-1"))
        let connection = ledger.connection
        try connection.execute("""
            INSERT INTO notifications (dedupe_key, version, notification_type, original_transaction_id, subscription_id, outcome)
            VALUES ('v2:forget-test', 2, 'DID_RENEW', '4001', $1, 'queued'),
                   ('v2:before-registration', 2, 'SUBSCRIBED', '4002', NULL, 'unknown_subscription')
            """, [.int64(ids[0])])
        try connection.execute(
            "INSERT INTO account_claims (subscription_id, account_id, receipt_sha256) VALUES ($1, 'acct-1', 'ab12')", [.int64(ids[2])])
        let endpoint = try connection.query(
            "INSERT INTO webhook_endpoints (url, secret) VALUES ('https://hooks.example.com/rf', 'whsec_test') RETURNING id")[0]
        try connection.execute("UPDATE events SET published_at = now()")
        try connection.execute("""
            INSERT INTO webhook_deliveries (endpoint_id, event_id, state, attempts, delivered_at)
            SELECT $1, id, 'delivered', 1, now() FROM events
            """, [.int64(try endpoint["id"].int64() ?? 0)])
        try connection.execute("INSERT INTO webhook_attempts (delivery_id, response_status) SELECT id, 200 FROM webhook_deliveries")
        return ([ids[0], ids[1]], ids[2])
    }

    static func count(_ ledger: Ledger, _ sql: String, _ ids: [Int64]) throws -> Int {
        Int(try ledger.connection.query(sql, [.text("{" + ids.map(String.init).joined(separator: ",") + "}")])[0]["n"].int64() ?? -1)
    }

    /// Rows left of these subscriptions, table by table (events apart from tombstones).
    static func remains(_ ledger: Ledger, of ids: [Int64]) throws -> [String: Int] {
        var left: [String: Int] = [:]
        for table in ["subscriptions WHERE id", "receipts WHERE subscription_id", "transactions WHERE subscription_id",
                      "verifications WHERE subscription_id", "notifications WHERE subscription_id",
                      "account_claims WHERE subscription_id"] {
            left[String(table.prefix { $0 != " " })] = try count(ledger, "SELECT count(*) AS n FROM \(table) = ANY($1::bigint[])", ids)
        }
        left["events"] = try count(ledger, """
            SELECT count(*) AS n FROM events WHERE subscription_id = ANY($1::bigint[]) AND type <> 'subscription_forgotten'
            """, ids)
        left["webhook_deliveries"] = try count(ledger, """
            SELECT count(*) AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.subscription_id = ANY($1::bigint[])
            """, ids)
        return left
    }

    @Test func forgettingAnAccountDeletesItsDataAndLeavesOneTombstoneEach() async throws {
        try await withLedger { ledger, _ in
            let (mine, theirs) = try Self.customers(ledger)
            let before = try Self.remains(ledger, of: mine)
            #expect(before.filter { $0.key != "account_claims" }.values.allSatisfy { $0 > 0 }, "something to delete: \(before)")
            let theirsBefore = try Self.remains(ledger, of: [theirs])
            let purchase = try #require(try ledger.purchases(accountID: "acct-1").first)

            let preview = try ledger.forget(.account(id: "acct-1", app: "default"), dryRun: true)
            #expect(preview.subscriptions == mine && preview.purchases == [purchase.id] && preview.claims == 1)
            #expect(try Self.remains(ledger, of: mine) == before, "a dry run deletes nothing")

            let forgotten = try ledger.forget(.account(id: "acct-1", app: "default"))
            #expect(forgotten == preview)
            let after = try Self.remains(ledger, of: mine)
            #expect(after.values.allSatisfy { $0 == 0 }, "left: \(after)")
            #expect(try ledger.purchases(accountID: "acct-1").isEmpty)
            #expect(try ledger.connection.query("SELECT count(*) AS n FROM notifications")[0]["n"].int64() == 0,
                    "also the notification that came before 4002 was registered")
            #expect(try Self.count(ledger, "SELECT count(*) AS n FROM events WHERE purchase_id = ANY($1::bigint[]) AND type <> 'purchase_forgotten'", [purchase.id]) == 0)

            // acct-2 keeps everything but acct-1's claim on its subscription.
            var theirsAfter = theirsBefore
            theirsAfter["account_claims"] = 0
            #expect(try Self.remains(ledger, of: [theirs]) == theirsAfter)
            #expect(try ledger.subscriptions(accountID: "acct-2").map(\.id) == [theirs])

            // One tombstone per deleted row, unpublished (the relay announces it), naming what went.
            let tombstones = try ledger.connection.query("""
                SELECT type, coalesce(subscription_id, purchase_id) AS subject, original_transaction_id,
                    payload->>'environment' AS environment, payload->>'app' AS app, published_at IS NULL AS pending
                FROM events WHERE type LIKE '%_forgotten' ORDER BY seq
                """)
            #expect(try tombstones.map { try $0["type"].text() ?? "" }
                == ["subscription_forgotten", "subscription_forgotten", "purchase_forgotten"])
            #expect(try tombstones.map { try $0["subject"].int64() ?? 0 } == mine + [purchase.id])
            #expect(try tombstones.map { try $0["original_transaction_id"].text() ?? "" } == ["4001", "4002", "5001"])
            #expect(try tombstones.allSatisfy {
                try $0["environment"].text() == "Production" && $0["app"].text() == "default" && $0["pending"].bool() == true
            })

            // Idempotent: nothing left to forget, nothing more announced.
            #expect(try ledger.forget(.account(id: "acct-1", app: "default")).isEmpty)
            #expect(try ledger.connection.query("SELECT count(*) AS n FROM events WHERE type LIKE '%_forgotten'")[0]["n"].int64() == 3)
        }
    }

    @Test func aSubscriptionIsForgottenByIdOrOriginalTransactionIDAndOtherAppsKeepTheirs() async throws {
        try await withLedger { ledger, _ in
            let (mine, theirs) = try Self.customers(ledger)
            try ledger.addSubscriptions([NewSubscription(app: "photos", originalTransactionID: "4002", receipt: nil)])
            let photos = try #require(try ledger.subscription(originalTransactionID: "4002", app: "photos"))

            #expect(try ledger.forget(.subscription(id: mine[0])).subscriptions == [mine[0]])
            #expect(try ledger.forget(.originalTransaction(id: "4002", app: "default")).subscriptions == [mine[1]])
            #expect(try ledger.subscription(id: photos.id) != nil, "the same original_transaction_id of another app stays")
            #expect(try ledger.forget(.originalTransaction(id: "4002", app: nil)).subscriptions == [photos.id])
            #expect(try ledger.subscription(id: theirs) != nil)
            #expect(try ledger.purchases(accountID: "acct-1").count == 1, "only forgetting the account takes its purchases")
        }
    }

    /// A worker's write holds the subscription's row until it commits: forget waits for it, then
    /// deletes what it wrote. A write that comes after forget finds the subscription gone.
    @Test func aWriteMeanwhileIsDeletedWithTheRestOrWritesNothing() async throws {
        try await withLedger { ledger, database in
            let subscription = try ledger.seedVerified("4101")
            let worker = try database.connect()
            try worker.execute("BEGIN")
            try worker.execute("UPDATE subscriptions SET version = version + 1 WHERE id = $1", [.int64(subscription.id)])
            try worker.execute("""
                INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
                VALUES (gen_random_uuid(), $1, '4101', 'renewed', '{}', now())
                """, [.int64(subscription.id)])
            let forgetting = Outcome()
            Thread { forgetting.set(Result { try Ledger(database.connect()).forget(.subscription(id: subscription.id)) }) }.start()
            #expect(forgetting.done.wait(timeout: .now() + 0.5) == .timedOut, "forget waits for the worker's row lock")
            try worker.execute("COMMIT")
            forgetting.done.wait()
            #expect(try forgetting.result?.get().subscriptions == [subscription.id])
            #expect(try ledger.connection.query("SELECT type FROM events").map { try $0["type"].text() ?? "" } == ["subscription_forgotten"])

            let late = try S.write(subscription, S.response(S.months("4101", 2)), at: S.day(2, 10))
            #expect(try ledger.persist(late, nextNightlyRun: S.nightlyRun).isMissing)
            #expect(try ledger.connection.query("SELECT count(*) AS n FROM events")[0]["n"].int64() == 1)
        }
    }
}

/// What a thread's `forget` returned, once it has.
private final class Outcome: Sendable {
    let done = DispatchSemaphore(value: 0)
    private let stored = Mutex<Result<Forgotten, any Error>?>(nil)

    var result: Result<Forgotten, any Error>? { stored.withLock { $0 } }

    func set(_ result: Result<Forgotten, any Error>) {
        stored.withLock { $0 = result }
        done.signal()
    }
}
