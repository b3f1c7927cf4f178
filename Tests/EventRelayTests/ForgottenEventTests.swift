import EventRelay
import Foundation
import Ledger
import PostgresClient
import TestSupport
import Testing

/// A forgotten subscription's tombstone travels like any event: to the stream, under the deleted
/// subscription's id, and to every webhook; what was not yet published of it never is.
@Suite struct ForgottenEventTests {
    @Test func theTombstoneIsPublishedAndTheUnpublishedPastIsNot() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { server.stop() }
        let (forgotten, published, entries) = try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            _ = try registry.add(url: "http://127.0.0.1:\(server.port)/hook", eventTypes: [])
            _ = try registry.add(url: "http://127.0.0.1:\(server.port)/deletions", eventTypes: ["subscription_forgotten"])
            let subscriptions = try insertSubscriptions(2, on: database)
            let published = try insertEvent(subscriptions[0], type: "renewed", on: database)
            try insertEvent(subscriptions[1], type: "renewed", on: database)
            try world.relay().runOnce()
            try insertEvent(subscriptions[0], type: "refunded", on: database)  // not yet published

            let forgotten = try Ledger(database).forget(.subscription(id: subscriptions[0]))
            try world.relay().runOnce()
            try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local()).runOnce()
            return (forgotten, published, try streamEntries(world.streamKey, on: world.redis()))
        }
        let id = try #require(forgotten.subscriptions.first)
        let mine = entries.filter { $0.fields["subscription_id"] == "\(id)" }
        #expect(mine.map { $0.fields["type"] } == ["renewed", "subscription_forgotten"], "published before, then the tombstone only")
        #expect(mine.first?.fields["id"] == published)
        let tombstone = try #require(mine.last)
        #expect(tombstone.fields["original_transaction_id"] == "otid-1")
        #expect(tombstone.fields["payload"]?.contains(#""environment": "Production""#) == true, "\(tombstone.fields)")
        let hooked = server.requests.filter { $0.headers["webhook-id"] == tombstone.fields["id"] }
        #expect(hooked.map(\.target).sorted() == ["/deletions", "/hook"], "every webhook that wants it hears of it")
        #expect(server.requests.filter { $0.target == "/deletions" }.count == 1, "only the tombstone goes to /deletions")
        let body = String(decoding: hooked.first?.body ?? [], as: UTF8.self)
        #expect(body.contains(#""type" : "subscription_forgotten""#), "\(body)")
    }
}
