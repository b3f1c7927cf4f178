import Foundation
import PostgresClient

extension WebhookRegistry {
    /// Gives the endpoint a new signing secret and returns it (give it to the receiver). The
    /// current one goes on signing beside it for `overlap`: every delivery meanwhile carries both
    /// signatures, so the receiver may switch at any moment in between; rotating again within the
    /// overlap ends the older one at once. The overlap runs from `now`, the process clock's reading,
    /// which the dispatcher compares its end with.
    public func rotateSigningSecret(id: Int64, overlap: Duration, now: Date) throws -> (secret: WebhookSecret, previousUntil: Date) {
        guard let keyring else { throw WebhookError.noSecretKey }
        return try database.transaction { database in
            guard let row = try database.query(
                "SELECT id, secret, secret_key_id, secret_sealed FROM webhook_endpoints WHERE id = $1 FOR UPDATE", [.int64(id)]
            ).first else { throw WebhookError.unknownEndpoint(id) }
            let (previousKeyID, previousSealed) = try keyring.seal(try StoredSecret(row).open(with: keyring, endpointID: id), endpointID: id)
            let secret = WebhookSecret.generate()
            let (keyID, sealed) = try keyring.seal(secret, endpointID: id)
            let until = try database.query("""
                UPDATE webhook_endpoints SET secret = NULL, secret_key_id = $2, secret_sealed = $3, previous_secret_key_id = $4,
                    previous_secret_sealed = $5, previous_secret_until = $7::timestamptz + $6 * interval '1 second'
                WHERE id = $1 RETURNING previous_secret_until
                """, [.int64(id), .text(keyID), .bytea(sealed), .text(previousKeyID), .bytea(previousSealed),
                      .int64(overlap.components.seconds), .timestamptz(now)])[0]["previous_secret_until"].timestamptz() ?? Date()
            return (secret, until)
        }
    }

    /// Seals every stored secret that is not under the keyring's current key again under it: those
    /// under a previous key, and plaintext ones from before encryption (migration 10). Returns how
    /// many it sealed again and how many were already under the current key. One transaction: a
    /// secret that cannot be opened (its key is not in the keyring) changes nothing and names its
    /// endpoint. After it, the previous keys can be dropped from the configuration.
    public func rotateSecrets() throws -> (resealed: Int, alreadyCurrent: Int) {
        guard let keyring else { throw WebhookError.noSecretKey }
        return try database.transaction { database in
            let rows = try database.query("""
                SELECT id, secret, secret_key_id, secret_sealed, previous_secret_key_id, previous_secret_sealed
                FROM webhook_endpoints ORDER BY id FOR UPDATE
                """)
            var resealed = 0
            for row in rows {
                let id = try row["id"].int64() ?? 0
                func sealedAgain(_ stored: StoredSecret) throws -> (keyID: String, sealed: Data)? {
                    guard stored.keyID != keyring.current.id else { return nil }
                    do {
                        return try keyring.seal(try stored.open(with: keyring, endpointID: id), endpointID: id)
                    } catch WebhookError.undecryptableSecret(let reason) {
                        throw WebhookError.undecryptableSecret("endpoint \(id): \(reason)")
                    }
                }
                // A signing secret's rotation may still hold the previous one: it goes under the new key too.
                let current = try sealedAgain(try StoredSecret(row))
                let previous = try StoredSecret(previousIn: row).flatMap(sealedAgain)
                guard current != nil || previous != nil else { continue }
                if let current {
                    try database.execute(
                        "UPDATE webhook_endpoints SET secret = NULL, secret_key_id = $2, secret_sealed = $3 WHERE id = $1",
                        [.int64(id), .text(current.keyID), .bytea(current.sealed)])
                }
                if let previous {
                    try database.execute(
                        "UPDATE webhook_endpoints SET previous_secret_key_id = $2, previous_secret_sealed = $3 WHERE id = $1",
                        [.int64(id), .text(previous.keyID), .bytea(previous.sealed)])
                }
                resealed += 1
            }
            return (resealed, rows.count - resealed)
        }
    }

    /// The id of the key new secrets are sealed under; nil without a keyring.
    public var keyID: String? { keyring?.current.id }

    /// How many endpoints still have a plaintext secret from before encryption (`rotateSecrets` seals them).
    public func plaintextSecretCount() throws -> Int {
        Int(try database.query("SELECT count(*) AS n FROM webhook_endpoints WHERE secret IS NOT NULL")[0]["n"].int64() ?? 0)
    }
}
