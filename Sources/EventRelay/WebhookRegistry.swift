import AppStore
import Foundation
import PostgresClient
import Redaction

/// One receiver of webhooks, as listed. The secret is never part of it.
public struct WebhookEndpoint: Sendable, Equatable {
    public let id: Int64
    public let url: String
    /// The event types it receives; empty means all.
    public let eventTypes: [String]
    public let isEnabled: Bool
    /// Why it was disabled (by an operator, or by a 410 Gone from the receiver).
    public let disabledReason: String?
    public let createdAt: Date
    /// Until when its previous signing secret still signs beside the current one (a rotation), if it does.
    public let previousSecretUntil: Date?

    /// The endpoint in one line, its URL's password masked, as `receiptfleet webhooks list` lists it.
    public var line: String {
        let types = eventTypes.isEmpty ? "all events" : eventTypes.joined(separator: ",")
        let state = isEnabled ? "enabled" : "disabled (\(disabledReason ?? "-"))"
        let rotating = previousSecretUntil.map { "  rotating: the previous secret signs too until \($0.formatted(.iso8601))" } ?? ""
        return "\(id)  \(Redact.url(url))  \(types)  \(state)\(rotating)"
    }
}

/// Adds, lists, disables and removes webhook endpoints (`receiptfleet webhooks …`), through a
/// connection used from the calling thread.
public struct WebhookRegistry {
    let database: PostgresConnection
    /// Seals new secrets (and, in `rotateSecrets`, opens and seals again the stored ones).
    let keyring: WebhookKeyring?
    private let allowsPrivateNetworks: Bool

    /// `keyring` is needed to add endpoints and to rotate; `allowsPrivateNetworks` lets `add` accept
    /// loopback, private and other non-public addresses and plain http (`--allow-private-webhooks`).
    public init(database: PostgresConnection, keyring: WebhookKeyring? = nil, allowsPrivateNetworks: Bool = false) {
        self.database = database
        self.keyring = keyring
        self.allowsPrivateNetworks = allowsPrivateNetworks
    }

    /// Adds an endpoint that receives `eventTypes` (names such as "renewed"; none means all) and
    /// returns it with its new secret, which is stored encrypted and never shown again: give it to
    /// the receiver. Throws `invalidURL` unless `url` is http(s) with a host, `refusedURL` for a URL
    /// the destination policy refuses (`WebhookDestination`), `unknownEventTypes` for other names,
    /// and `noSecretKey` without a keyring: a secret is never stored in plaintext.
    public func add(url: String, eventTypes: [String]) throws -> (endpoint: WebhookEndpoint, secret: WebhookSecret) {
        try WebhookDestination.check(url, allowsPrivateNetworks: allowsPrivateNetworks, resolving: true, adding: true)
        let unknown = eventTypes.filter { SubscriptionEventType(rawValue: $0) == nil }
        guard unknown.isEmpty else { throw WebhookError.unknownEventTypes(unknown) }
        guard let keyring else { throw WebhookError.noSecretKey }

        let secret = WebhookSecret.generate()
        var uniqueTypes: [String] = []
        for type in eventTypes where !uniqueTypes.contains(type) { uniqueTypes.append(type) }
        let endpoint = try database.transaction { database in
            // The id first: the sealed secret is bound to its endpoint's id.
            let id = try database.query(
                "SELECT nextval(pg_get_serial_sequence('webhook_endpoints', 'id')) AS id")[0]["id"].int64() ?? 0
            let (keyID, sealed) = try keyring.seal(secret, endpointID: id)
            let rows = try database.query(
                """
                INSERT INTO webhook_endpoints (id, url, secret_key_id, secret_sealed, event_types)
                VALUES ($1, $2, $3, $4, $5::text[]) RETURNING \(Self.columns)
                """,
                [.int64(id), .text(url), .text(keyID), .bytea(sealed), .text(EventSQL.arrayLiteral(uniqueTypes))])
            return try Self.endpoint(rows[0])
        }
        return (endpoint, secret)
    }

    /// Every endpoint, oldest first.
    public func list() throws -> [WebhookEndpoint] {
        try database.query("SELECT \(Self.columns) FROM webhook_endpoints ORDER BY id").map(Self.endpoint)
    }

    /// Stops deliveries to an endpoint: it gets no new deliveries, and its pending ones fail.
    public func disable(id: Int64, reason: String = "disabled by an operator") throws {
        try database.transaction { database in
            guard try Self.disable(id: id, reason: reason, on: database) else {
                throw WebhookError.unknownEndpoint(id)
            }
        }
    }

    /// Deletes an endpoint with its deliveries and their attempts.
    public func remove(id: Int64) throws {
        guard try database.execute("DELETE FROM webhook_endpoints WHERE id = $1", [.int64(id)]) == 1 else {
            throw WebhookError.unknownEndpoint(id)
        }
    }

    /// Disables an endpoint and fails its pending deliveries, inside the caller's transaction (the
    /// dispatcher's, on a 410). Returns false if there is no such endpoint.
    static func disable(id: Int64, reason: String, on database: PostgresConnection) throws -> Bool {
        let updated = try database.execute(
            "UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2 WHERE id = $1",
            [.int64(id), .text(reason)])
        try database.execute(
            """
            UPDATE webhook_deliveries SET state = 'failed', last_error = 'endpoint disabled: ' || $2
            WHERE endpoint_id = $1 AND state = 'pending'
            """,
            [.int64(id), .text(reason)])
        return updated == 1
    }

    private static let columns = """
        id, url, array_to_string(event_types, ',') AS event_types, enabled, disabled_reason, created_at,
        CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until
        """

    private static func endpoint(_ row: PostgresRow) throws -> WebhookEndpoint {
        let types = try row["event_types"].text() ?? ""
        return WebhookEndpoint(
            id: try row["id"].int64() ?? 0,
            url: try row["url"].text() ?? "",
            eventTypes: types.isEmpty ? [] : types.split(separator: ",").map(String.init),
            isEnabled: try row["enabled"].bool() ?? false,
            disabledReason: try row["disabled_reason"].text(),
            createdAt: try row["created_at"].timestamptz() ?? Date(timeIntervalSince1970: 0),
            previousSecretUntil: try row["previous_secret_until"].timestamptz())
    }
}
