import EventRelay
import Foundation
import PostgresClient
import TestSupport
import Testing

/// Webhook secrets are stored encrypted; the key can be rotated without a delivery signed wrongly.
@Suite struct WebhookKeyRotationTests {
    private static let keyA = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
    private static let keyB = "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="
    private static let keyC = "Q0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0NDQ0M="

    /// Added under key A; B becomes current with A as previous, and deliveries still sign with the
    /// endpoint's secret; after rotate-key, A can go and they still do.
    @Test func rotatingTheKeyKeepsEverySignatureRight() async throws {
        let receiver = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { receiver.stop() }
        let a = try WebhookKeyring(current: Self.keyA)
        let bWithA = try WebhookKeyring(current: Self.keyB, previous: [Self.keyA])
        let b = try WebhookKeyring(current: Self.keyB)
        let (secret, keyIDs, rotations, unknownKey, states) = try await World.with { world in
            let database = try world.connect()
            let (endpoint, secret) = try WebhookRegistry(database: database, keyring: a, allowsPrivateNetworks: true)
                .add(url: "http://127.0.0.1:\(receiver.port)/hook", eventTypes: [])
            func deliverOne(with keys: WebhookKeyring) throws -> String {
                try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
                try world.relay().runOnce()
                var configuration = WebhookConfiguration.local()
                configuration.secretKeys = keys
                try WebhookDispatcher(database: database, configuration: configuration).runOnce()
                return try database.query(
                    "SELECT state FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id DESC LIMIT 1", [.int64(endpoint.id)]
                )[0]["state"].text() ?? ""
            }
            func keyID() throws -> String? {
                try database.query("SELECT secret_key_id FROM webhook_endpoints")[0]["secret_key_id"].text()
            }
            var keyIDs = [try keyID()]
            var states = [try deliverOne(with: bWithA)]  // B is current, A still opens the secret
            let first = try WebhookRegistry(database: database, keyring: bWithA).rotateSecrets()
            let second = try WebhookRegistry(database: database, keyring: bWithA).rotateSecrets()
            keyIDs.append(try keyID())
            states.append(try deliverOne(with: b))  // A is gone
            // A key that opens nothing stored: rotation refuses, and changes nothing.
            let unknownKey = Result { try WebhookRegistry(database: database, keyring: .init(current: Self.keyC)).rotateSecrets() }
                .failure as? WebhookError
            keyIDs.append(try keyID())
            return (secret, keyIDs, [first.resealed, first.alreadyCurrent, second.resealed, second.alreadyCurrent], unknownKey, states)
        }
        #expect(states == ["delivered", "delivered"])
        #expect(keyIDs == [a.current.id, b.current.id, b.current.id])
        #expect(rotations == [1, 0, 0, 1])
        guard case .undecryptableSecret(let reason) = unknownKey else {
            Issue.record("expected undecryptableSecret, got \(String(describing: unknownKey))")
            return
        }
        #expect(reason.contains(b.current.id), "names the key the secret is under: \(reason)")
        try expectSignedWith(secret, receiver.requests)
    }

    /// Endpoints added before encryption (migration 10) keep their plaintext secret until rotate-key
    /// seals it; deliveries sign with it all along.
    @Test func rotateKeySealsPlaintextSecretsFromBeforeEncryption() async throws {
        let receiver = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { receiver.stop() }
        let secret = WebhookSecret.generate()
        let (before, rotation, after, stored, states) = try await World.with { world in
            let database = try world.connect()
            try database.execute(
                "INSERT INTO webhook_endpoints (url, secret) VALUES ($1, $2)",
                [.text("http://127.0.0.1:\(receiver.port)/hook"), .text(secret.text)])
            let registry = WebhookRegistry.local(database)
            let before = try registry.plaintextSecretCount()
            var states: [String] = []
            for round in 0..<2 {
                if round == 1 { _ = try registry.rotateSecrets() }
                try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
                try world.relay().runOnce()
                try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local()).runOnce()
                states.append(try database.query("SELECT state FROM webhook_deliveries ORDER BY id DESC LIMIT 1")[0]["state"].text() ?? "")
            }
            let row = try database.query("SELECT secret, secret_key_id FROM webhook_endpoints")[0]
            return (before, try registry.rotateSecrets(), try registry.plaintextSecretCount(),
                    [try row["secret"].text(), try row["secret_key_id"].text()], states)
        }
        #expect(before == 1)
        #expect(rotation.resealed == 0 && rotation.alreadyCurrent == 1, "the first rotation sealed it")
        #expect(after == 0)
        #expect(stored == [nil, WebhookKeyring.test.current.id])
        #expect(states == ["delivered", "delivered"])
        try expectSignedWith(secret, receiver.requests)
    }

    /// Without a key, add refuses rather than store the secret in plaintext.
    @Test func addWithoutAKeyRefusesAndStoresNothing() async throws {
        let (error, count) = try await World.with { world in
            let database = try world.connect()
            let error = Result {
                try WebhookRegistry(database: database, allowsPrivateNetworks: true).add(url: "http://127.0.0.1:9/", eventTypes: [])
            }.failure as? WebhookError
            return (error, try database.query("SELECT count(*) AS n FROM webhook_endpoints")[0]["n"].int64())
        }
        #expect(error == .noSecretKey)
        #expect(error?.description.contains("RECEIPTFLEET_WEBHOOK_SECRET_KEY") == true)
        #expect(count == 0)
    }

    @Test func aKeyMustBeTheBase64OfThirtyTwoBytesAndIsNeverQuoted() throws {
        let short = "c2hvcnQta2V5"
        let error = Result { try WebhookKeyring(current: Self.keyA, previous: [short]) }.failure as? WebhookError
        #expect(error?.description.contains("previous webhook secret key 1") == true)
        #expect(error?.description.contains(short) == false)
        #expect(try WebhookKeyring(current: Self.keyB, previous: [Self.keyA]).description
            == "current key \(try WebhookKeyring(current: Self.keyB).current.id), previous \(try WebhookKeyring(current: Self.keyA).current.id)")
    }
}

/// Every request carries a signature that `secret` makes for its id, timestamp and body.
private func expectSignedWith(_ secret: WebhookSecret, _ requests: [TestHTTPServer.Request]) throws {
    #expect(!requests.isEmpty)
    for request in requests {
        let id = try #require(request.headers["webhook-id"])
        let timestamp = try #require(request.headers["webhook-timestamp"].flatMap { Int64($0) })
        #expect(request.headers["webhook-signature"] == secret.signature(id: id, timestamp: timestamp, body: request.body))
    }
}
