import EventRelay
import Foundation
import PostgresClient
import TestSupport
import Testing

/// `receiptfleet webhooks replay`: past events go again to one endpoint, an endpoint added later
/// gets what it missed, and no other endpoint is touched.
@Suite struct WebhookReplayTests {
    /// Two published events (renewed, then refunded), delivered to `first`; `later` added after them.
    struct Scene {
        let first: Int64
        let later: Int64
        let renewed: String
        let refunded: String
    }

    static func scene(_ url: String, in world: World, on database: PostgresConnection) throws -> Scene {
        let registry = WebhookRegistry.local(database)
        let first = try registry.add(url: url + "/first", eventTypes: []).endpoint.id
        let subscriptions = try insertSubscriptions(2, on: database)
        let renewed = try insertEvent(subscriptions[0], type: "renewed", on: database)
        let refunded = try insertEvent(subscriptions[1], type: "refunded", on: database)
        try world.relay().runOnce()
        let dispatcher = try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local())
        try dispatcher.runOnce()
        let later = try registry.add(url: url + "/later", eventTypes: []).endpoint.id
        return Scene(first: first, later: later, renewed: renewed, refunded: refunded)
    }

    /// Each delivery of `endpoint`: its event's id and its state.
    static func deliveries(_ endpoint: Int64, on database: PostgresConnection) throws -> [String: String] {
        var states: [String: String] = [:]
        for row in try database.query(
            "SELECT event_id::text AS event, state, attempts FROM webhook_deliveries WHERE endpoint_id = $1", [.int64(endpoint)]) {
            states[try row["event"].text() ?? ""] = "\(try row["state"].text() ?? "") after \(try row["attempts"].int64() ?? -1)"
        }
        return states
    }

    @Test func anEndpointAddedLaterGetsThePastAndAnotherGetsOneTypeAgain() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let (scene, before, later, again, afterDelivery) = try await World.with { world in
            let database = try world.connect()
            let scene = try Self.scene(base, in: world, on: database)
            let before = try Self.deliveries(scene.first, on: database)
            let registry = WebhookRegistry.local(database)
            let later = try registry.replay(endpoint: scene.later, since: .distantPast)
            let again = try registry.replay(endpoint: scene.first, since: .distantPast, eventTypes: ["refunded"])
            let states = (try Self.deliveries(scene.first, on: database), try Self.deliveries(scene.later, on: database))
            try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local()).runOnce()
            return (scene, before, (later, states.1), (again, states.0), try Self.deliveries(scene.later, on: database))
        }
        #expect(before == [scene.renewed: "delivered after 1", scene.refunded: "delivered after 1"])
        #expect(later.0 == WebhookReplay(queued: 2, again: 0, pages: 1))
        #expect(later.1 == [scene.renewed: "pending after 0", scene.refunded: "pending after 0"])
        #expect(again.0 == WebhookReplay(queued: 1, again: 1, pages: 1))
        #expect(again.1 == [scene.renewed: "delivered after 1", scene.refunded: "pending after 0"], "only the type asked for")
        #expect(afterDelivery == [scene.renewed: "delivered after 1", scene.refunded: "delivered after 1"])
        // The first two requests were the original deliveries; then the replayed ones, each under its event's id.
        let replayed = server.requests.dropFirst(2).map { "\($0.target) \($0.headers["webhook-id"] ?? "")" }.sorted()
        #expect(replayed == ["/first \(scene.refunded)", "/later \(scene.refunded)", "/later \(scene.renewed)"].sorted())
    }

    @Test func onlyEventsSinceTheTimeGoInPagesAndPendingOnesStayAsTheyAre() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { server.stop() }
        let (scene, recent, paged, pendingAgain) = try await World.with { world in
            let database = try world.connect()
            let scene = try Self.scene("http://127.0.0.1:\(server.port)", in: world, on: database)
            _ = try database.execute(
                "UPDATE events SET created_at = now() - interval '2 days' WHERE id = $1::uuid", [.text(scene.renewed)])
            let registry = WebhookRegistry.local(database)
            let recent = try registry.replay(endpoint: scene.later, since: Date() - 86_400)
            var pages: [Int] = []
            let paged = try registry.replay(endpoint: scene.first, since: .distantPast, pageSize: 1) { pages.append($0.queued) }
            let pendingAgain = try registry.replay(endpoint: scene.first, since: .distantPast)
            return (scene, (recent, try Self.deliveries(scene.later, on: database)), (paged, pages), pendingAgain)
        }
        #expect(recent.0.queued == 1 && recent.1 == [scene.refunded: "pending after 0"], "the renewal was recorded two days ago")
        #expect(paged.0 == WebhookReplay(queued: 2, again: 2, pages: 2) && paged.1 == [1, 2])
        #expect(pendingAgain.queued == 0, "deliveries still pending are not queued twice")
    }

    @Test func aReplayNamesWhatItCannotDo() async throws {
        try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            let endpoint = try registry.add(url: "http://127.0.0.1:9/hooks", eventTypes: []).endpoint.id
            #expect(throws: WebhookError.unknownEventTypes(["renewd"])) {
                try registry.replay(endpoint: endpoint, since: .distantPast, eventTypes: ["renewd"])
            }
            #expect(throws: WebhookError.unknownEndpoint(endpoint + 100)) { try registry.replay(endpoint: endpoint + 100, since: .distantPast) }
            try registry.disable(id: endpoint)
            #expect(throws: WebhookError.disabledEndpoint(endpoint)) { try registry.replay(endpoint: endpoint, since: .distantPast) }
        }
    }
}
