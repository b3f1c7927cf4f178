import EventRelay
import Foundation
import PostgresClient
import TestSupport
import Testing

/// Webhooks cannot be aimed inside the network: not when added, and not when a name that passed
/// resolves inside later (DNS rebinding), nor through the environment's proxy.
@Suite struct WebhookDestinationTests {
    @Test(arguments: [
        "http://169.254.169.254/latest/meta-data/", "http://127.0.0.1/", "http://[::1]/", "http://10.0.0.1/",
        "https://169.254.169.254/", "https://127.0.0.1:8443/", "https://[::1]/", "https://10.0.0.1/",
        "https://172.16.5.4/", "https://192.168.1.1/", "https://100.64.0.1/", "https://[fe80::1]/", "https://[fd00::1]/",
        "https://[::ffff:127.0.0.1]/", "https://0.0.0.0/", "https://[::]/", "https://224.0.0.1/",
        "https://[::ffff:0:127.0.0.1]/", "https://[64:ff9b:1::7f00:1]/",
        "https://localhost/", "https://2130706433/",
    ])
    func addRefusesAddressesInsideTheNetwork(url: String) async throws {
        let (error, count) = try await World.with { world in
            let database = try world.connect()
            let error = Result { try WebhookRegistry(database: database, keyring: .test).add(url: url, eventTypes: []) }
            return (error.failure as? WebhookError, try database.query("SELECT count(*) AS n FROM webhook_endpoints")[0]["n"].int64())
        }
        guard case .refusedURL(let reason) = error else {
            Issue.record("expected refusedURL, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("is not a public internet address"), "\(reason)")
        #expect(error?.description.contains("--allow-private-webhooks") == true)
        #expect(count == 0)
    }

    @Test func theRefusalNamesTheAddressAndItsRangeButNotThePathOrQuery() async throws {
        let error = try await World.with { world in
            Result {
                try WebhookRegistry(database: world.connect(), keyring: .test)
                    .add(url: "http://169.254.169.254/latest/meta-data?tenant=url-token-789", eventTypes: [])
            }.failure as? WebhookError
        }
        let text = try #require(error?.description)
        #expect(text.contains("169.254.169.254 is not a public internet address (link-local)"), "\(text)")
        #expect(!text.contains("url-token-789") && !text.contains("meta-data"), "\(text)")
    }

    @Test func addRefusesPlainHTTPToAPublicHost() async throws {
        let error = try await World.with { world in
            Result {
                try WebhookRegistry(database: world.connect(), keyring: .test).add(url: "http://8.8.8.8/hooks", eventTypes: [])
            }.failure as? WebhookError
        }
        guard case .refusedURL(let reason) = error else {
            Issue.record("expected refusedURL, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("plain http"))
    }

    /// A URL is shown in the console and `webhooks list`: characters a URL may not hold raw are
    /// refused, whatever the policy on addresses, and so are credentials, in the user info or in
    /// the query, which would be stored and shown in plain text (the signature header does their work).
    @Test(arguments: [
        #"https://example.com/h"ook"#, "https://example.com/<script>", "https://example.com/a b", "https://example.com/{x}",
        "https://user:pass@example.com/hook", "https://token@example.com/hook", "https://example.com/hook?token=s3cr3t",
        "https://example.com/hook?a=1&API%5FKey=s3cr3t", "https://example.com/hook?sig=s3cr3t#x",
    ])
    func addRefusesCharactersAURLMayNotHoldRawAndCredentials(url: String) async throws {
        let error = try await World.with { world in
            Result {
                try WebhookRegistry(database: world.connect(), keyring: .test, allowsPrivateNetworks: true).add(url: url, eventTypes: [])
            }.failure as? WebhookError
        }
        guard case .invalidURL(let reason) = error else {
            Issue.record("expected invalidURL, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("percent-encode") || reason.contains("user name or password") || reason.contains("credential"))
        #expect(!reason.contains("pass@") && !reason.contains("token@") && !reason.contains("s3cr3t"))
    }

    @Test func allowPrivateWebhooksLetsDevelopmentReceiversIn() async throws {
        let added = try await World.with { world in
            let registry = WebhookRegistry(database: try world.connect(), keyring: .test, allowsPrivateNetworks: true)
            return try ["http://127.0.0.1:9/", "http://localhost:9/", "http://[::1]:9/", "http://10.0.0.1/"].map {
                try registry.add(url: $0, eventTypes: []).endpoint.url
            }
        }
        #expect(added.count == 4)
    }

    /// An endpoint whose name passed when it was added but resolves to loopback now: the address
    /// curl is about to connect to is refused, so the receiver never even sees a connection.
    @Test func aNameThatResolvesToLoopbackIsRefusedWhenConnecting() async throws {
        let (error, connections) = try await oneAttemptWithoutPrivateWebhooks(scheme: "https")
        #expect(connections == 0, "no connection reached the receiver")
        #expect(error.contains("refused to connect to") && error.contains("(loopback)"), "\(error)")
    }

    /// An endpoint added over plain http while that was allowed is not delivered to once it is not:
    /// the policy is checked again at every attempt, before any connection.
    @Test func plainHTTPIsRefusedAtDeliveryWhenPrivateWebhooksAreNotAllowed() async throws {
        let (error, connections) = try await oneAttemptWithoutPrivateWebhooks(scheme: "http")
        #expect(connections == 0)
        #expect(error.contains("refused webhook URL: plain http"), "\(error)")
    }

    /// A configured webhook proxy carries every delivery: the proxy, not the fleet, connects to the receiver.
    @Test func aConfiguredWebhookProxyCarriesTheDeliveries() async throws {
        let receiver = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { receiver.stop() }
        let proxy = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { proxy.stop() }
        let state = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(receiver.port)/hook", in: world, on: database)
            let configuration = WebhookConfiguration.local { $0.proxy = "http://127.0.0.1:\(proxy.port)" }
            try WebhookDispatcher(database: database, configuration: configuration).runOnce()
            return try delivery(pending.deliveryID, on: database).state
        }
        #expect(state == "delivered")
        #expect(proxy.requests.map(\.target) == ["http://127.0.0.1:\(receiver.port)/hook"], "a proxy request names the whole URL")
        #expect(receiver.acceptedConnections == 0)
    }
}

/// Adds an endpoint at `scheme`://localhost (allowed then), and makes one attempt with a dispatcher
/// that does not allow private webhooks. Returns the delivery's error and the connections the receiver saw.
private func oneAttemptWithoutPrivateWebhooks(scheme: String) async throws -> (error: String, connections: Int) {
    let receiver = try TestHTTPServer(.respond([.init(status: 204)]))
    defer { receiver.stop() }
    let error = try await World.with { world in
        let database = try world.connect()
        let pending = try pendingDelivery(to: "\(scheme)://localhost:\(receiver.port)/hook", in: world, on: database)
        try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local { $0.allowsPrivateNetworks = false }).runOnce()
        return try database.query(
            "SELECT last_error FROM webhook_deliveries WHERE id = $1", [.int64(pending.deliveryID)])[0]["last_error"].text()
    }
    return (error ?? "", receiver.acceptedConnections)
}
