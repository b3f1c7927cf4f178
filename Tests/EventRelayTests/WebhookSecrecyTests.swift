import EventRelay
import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct WebhookSecrecyTests {
    /// Every way an attempt can fail, each recorded somewhere an operator reads: none of those
    /// places may show a secret, or a token from the endpoint's URL.
    @Test func noSecretReachesAttemptsDeliveriesOrReasons() async throws {
        let failing = try TestHTTPServer(.respond([.init(status: 500, body: Array("internal error".utf8))]))
        defer { failing.stop() }
        let gone = try TestHTTPServer(.respond([.init(status: 410)]))
        defer { gone.stop() }
        let slow = try TestHTTPServer(.delay(.seconds(2)))
        defer { slow.stop() }
        let (refusing, refusedPort) = try bindLoopback()  // bound, not listening: connections are refused
        defer { close(refusing) }

        let (secrets, texts, made) = try await World.with { world in
            let database = try world.connect()
            let registry = WebhookRegistry.local(database)
            let urls = [
                "http://127.0.0.1:\(failing.port)/hooks", "http://127.0.0.1:\(gone.port)/hooks", "http://127.0.0.1:\(slow.port)/hooks",
                "http://127.0.0.1:\(refusedPort)/hooks", "http://127.0.0.1:\(failing.port)/mangled",
            ]
            let secrets = try urls.map { try registry.add(url: $0, eventTypes: []).secret.text }
            // Endpoints added before `add` refused credentials in a URL keep their token, and deliver.
            try database.execute("UPDATE webhook_endpoints SET url = url || '?token=url-token-123'")
            // A secret damaged in storage must not be quoted, nor its key, when it cannot be used.
            try database.execute(
                "UPDATE webhook_endpoints SET secret_sealed = $1 WHERE url LIKE '%mangled%'",
                [.bytea(Data("whsec_damaged-url-token-456-and-some-bytes".utf8))])
            try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
            try world.relay().runOnce()

            let configuration = WebhookConfiguration.local { $0.timeout = .milliseconds(300) }
            let made = try WebhookDispatcher(database: database, configuration: configuration).runOnce()
            let texts = try database.query(
                """
                SELECT error AS text FROM webhook_attempts
                UNION ALL SELECT last_error FROM webhook_deliveries
                UNION ALL SELECT disabled_reason FROM webhook_endpoints
                """
            ).compactMap { try $0["text"].text() }
            return (secrets, texts, made)
        }
        #expect(made == 5)
        #expect(texts.count >= 10, "every failed attempt and delivery has its error: \(texts)")
        #expect(texts.contains { $0.contains("timed out") || $0.contains("timeout") })
        #expect(texts.contains { $0.contains("cannot be decrypted") }, "the damaged secret is reported, not quoted")
        let forbidden = secrets.map { String($0.dropFirst("whsec_".count)) }
            + ["url-token-123", "url-token-456", WebhookKeyring.testKeyText]
        for text in texts {
            #expect(!forbidden.contains { text.contains($0) }, "\(text)")
        }
    }
}
