import EventRelay
import Foundation
import PostgresClient
import Testing

/// Events of one-time purchases have no subscription: the relay publishes them with their
/// `purchase_id` and keeps each purchase's events in order, as it does a subscription's.
@Suite struct PurchaseEventTests {
    @Test func aPurchaseEventIsPublishedWithItsPurchaseIDAndNoSubscriptionID() async throws {
        let (entries, purchase) = try await World.with { world in
            let database = try world.connect()
            let purchase = try insertPurchase("5001", on: database)
            try insertPurchaseEvent(purchase, on: database)
            try world.relay().runOnce()
            return (try streamEntries(world.streamKey, on: world.redis()), purchase)
        }
        try #require(entries.count == 1)
        #expect(entries[0].fields["purchase_id"] == String(purchase))
        #expect(entries[0].fields["type"] == "non_renewing_purchase")
        #expect(entries[0].fields["original_transaction_id"] == "5001")
        #expect(Set(entries[0].fields.keys) == ["schema_version", "id", "type", "purchase_id", "original_transaction_id", "occurred_at", "payload"])
    }

    /// Another relay's claim of a purchase's first event holds back its refund, not other events.
    @Test func anEventHeldElsewhereHoldsBackItsPurchaseOnly() async throws {
        let (whileHeld, afterwards, order, expected) = try await World.with { world in
            let database = try world.connect()
            let purchases = try [insertPurchase("5001", on: database), insertPurchase("5002", on: database)]
            let bought = try insertPurchaseEvent(purchases[0], on: database)
            let refunded = try insertPurchaseEvent(purchases[0], type: "refunded", on: database)
            let other = try insertPurchaseEvent(purchases[1], on: database)

            let holder = try world.connect()
            try holder.execute("BEGIN")
            try holder.execute("SELECT 1 FROM events WHERE id = $1 FOR UPDATE", [.text(bought)])
            let relay = try world.relay()
            let whileHeld = try relay.runOnce()
            try holder.execute("ROLLBACK")
            let afterwards = try relay.runOnce()
            let order = try streamEntries(world.streamKey, on: world.redis()).map { $0.fields["id"] ?? "" }
            return (whileHeld, afterwards, order, [other, bought, refunded])
        }
        #expect(whileHeld == 1, "only the other purchase's event may go while the first is held")
        #expect(afterwards == 2)
        #expect(order == expected)
    }

    @Test func anEventCannotBeAboutBothASubscriptionAndAPurchase() async throws {
        let refused = try await World.with { world in
            let database = try world.connect()
            let purchase = try insertPurchase("5001", on: database)
            let subscription = try insertSubscriptions(1, on: database)[0]
            do {
                try database.execute("""
                    INSERT INTO events (id, subscription_id, purchase_id, original_transaction_id, type, payload, occurred_at)
                    VALUES (gen_random_uuid(), $1, $2, '5001', 'refunded', '{}', now())
                    """, [.int64(subscription), .int64(purchase)])
                return false
            } catch let error as PostgresError where error.kind == .server {
                return true
            }
        }
        #expect(refused)
    }
}

func insertPurchase(_ transactionID: String, on database: PostgresConnection) throws -> Int64 {
    try database.query("""
        INSERT INTO purchases (transaction_id, original_transaction_id, status) VALUES ($1, $1, 'owned') RETURNING id
        """, [.text(transactionID)])[0]["id"].int64() ?? 0
}

/// Inserts one event of `purchase` and returns its id.
@discardableResult
func insertPurchaseEvent(_ purchase: Int64, type: String = "non_renewing_purchase", on database: PostgresConnection) throws -> String {
    try database.query("""
        INSERT INTO events (id, purchase_id, original_transaction_id, type, payload, occurred_at)
        SELECT gen_random_uuid(), id, original_transaction_id, $2, '{"transaction_id": "5001"}'::jsonb, now()
        FROM purchases WHERE id = $1
        RETURNING id::text AS id
        """, [.int64(purchase), .text(type)])[0]["id"].text() ?? ""
}
