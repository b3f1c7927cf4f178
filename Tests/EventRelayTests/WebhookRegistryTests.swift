import EventRelay
import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct WebhookRegistryTests {
    @Test func addStoresAFreshWhsecSecretThatOnlyItsTextReveals() async throws {
        let (first, second, stored, listed) = try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            let first = try registry.add(url: "https://hooks.example.com/rf", eventTypes: ["renewed", "refunded", "renewed"])
            let second = try registry.add(url: "http://127.0.0.1:9/", eventTypes: [])
            let stored = try database.query("SELECT secret, secret_key_id, secret_sealed FROM webhook_endpoints ORDER BY id").map {
                (plaintext: try $0["secret"].text(), keyID: try $0["secret_key_id"].text(), sealed: try $0["secret_sealed"].bytea())
            }
            return (first, second, stored, try registry.list())
        }
        let key = try #require(Data(base64Encoded: String(first.secret.text.dropFirst("whsec_".count))))
        #expect(first.secret.text.hasPrefix("whsec_"))
        #expect(key.count == 32)
        #expect(first.secret != second.secret)
        // Stored sealed under the configured key, never in plaintext.
        #expect(stored.map(\.plaintext) == [nil, nil])
        #expect(stored.map(\.keyID) == [WebhookKeyring.test.current.id, WebhookKeyring.test.current.id])
        for (row, secret) in zip(stored, [first.secret, second.secret]) {
            let sealed = try #require(row.sealed)
            #expect(sealed.range(of: key) == nil && sealed.range(of: Data(secret.text.utf8)) == nil)
        }

        // Printing the secret, or anything holding it, shows no key.
        for shown in ["\(first.secret)", String(reflecting: first.secret), String(describing: first), dumped(first)] {
            #expect(!shown.contains(first.secret.text.dropFirst("whsec_".count)), "\(shown)")
        }
        #expect(listed == [first.endpoint, second.endpoint])
        #expect(listed.map(\.eventTypes) == [["renewed", "refunded"], []])
        #expect(listed.allSatisfy { $0.isEnabled })
    }

    @Test(arguments: ["ftp://files.example.com/drop", "file:///etc/passwd", "http:///no-host", "hooks.example.com/rf", ""])
    func addRefusesAnythingButHTTPURLsWithAHost(url: String) async throws {
        let (error, count) = try await World.with { world in
            let database = try world.connect()
            let error = Result { try WebhookRegistry(database: database).add(url: url, eventTypes: []) }
            return (error.failure as? WebhookError, try database.query("SELECT count(*) AS n FROM webhook_endpoints")[0]["n"].int64())
        }
        guard case .invalidURL = error else {
            Issue.record("expected invalidURL, got \(String(describing: error))")
            return
        }
        #expect(count == 0)
    }

    @Test func addRefusesUnknownEventTypesNamingThem() async throws {
        let error = try await World.with { world in
            Result {
                try WebhookRegistry(database: world.connect())
                    .add(url: "https://hooks.example.com/", eventTypes: ["renewed", "renewd"])
            }.failure as? WebhookError
        }
        #expect(error == .unknownEventTypes(["renewd"]))
        #expect(error?.description.contains("auto_renew_disabled") == true, "the message lists the known types")
    }

    @Test func publishingCreatesOneDeliveryPerEnabledEndpointThatWantsTheType() async throws {
        let deliveries = try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            let all = try registry.add(url: "https://all.example.com/", eventTypes: []).endpoint.id
            let refunds = try registry.add(url: "https://refunds.example.com/", eventTypes: ["refunded"]).endpoint.id
            let disabled = try registry.add(url: "https://off.example.com/", eventTypes: []).endpoint.id
            try registry.disable(id: disabled)
            let subscription = try insertSubscriptions(1, on: database)[0]
            let renewed = try insertEvent(subscription, type: "renewed", on: database)
            let refunded = try insertEvent(subscription, type: "refunded", on: database)
            try world.relay().runOnce()
            let rows = try database.query(
                "SELECT endpoint_id, event_id::text AS event_id, state FROM webhook_deliveries ORDER BY endpoint_id, id")
            let pairs = try rows.map { "\(try $0["endpoint_id"].int64() ?? 0) \(try $0["event_id"].text() ?? "") \(try $0["state"].text() ?? "")" }
            return (pairs, ["\(all) \(renewed) pending", "\(all) \(refunded) pending", "\(refunds) \(refunded) pending"])
        }
        #expect(deliveries.0 == deliveries.1)
    }

    @Test func disableFailsPendingDeliveriesAndRemoveDeletesTheEndpoint() async throws {
        let (states, reason, afterRemove, unknownDisable, unknownRemove, id) = try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            let endpoint = try registry.add(url: "https://hooks.example.com/", eventTypes: []).endpoint
            try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
            try world.relay().runOnce()
            try registry.disable(id: endpoint.id, reason: "receiver retired")
            let states = try database.query("SELECT state, last_error FROM webhook_deliveries")
                .map { "\(try $0["state"].text() ?? "") \(try $0["last_error"].text() ?? "")" }
            let reason = try registry.list().first?.disabledReason
            try registry.remove(id: endpoint.id)
            let afterRemove = try database.query("SELECT count(*) AS n FROM webhook_deliveries")[0]["n"].int64()
            return (states, reason, afterRemove,
                    Result { try registry.disable(id: endpoint.id) }.failure as? WebhookError,
                    Result { try registry.remove(id: endpoint.id) }.failure as? WebhookError, endpoint.id)
        }
        #expect(states == ["failed endpoint disabled: receiver retired"])
        #expect(reason == "receiver retired")
        #expect(afterRemove == 0)
        #expect(unknownDisable == .unknownEndpoint(id))
        #expect(unknownRemove == .unknownEndpoint(id))
    }
}

private func dumped(_ value: some Any) -> String {
    var text = ""
    dump(value, to: &text)
    return text
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
