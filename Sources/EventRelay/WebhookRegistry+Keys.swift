import PostgresClient

extension WebhookRegistry {
    /// Seals every stored secret that is not under the keyring's current key again under it: those
    /// under a previous key, and plaintext ones from before encryption (migration 10). Returns how
    /// many it sealed again and how many were already under the current key. One transaction: a
    /// secret that cannot be opened (its key is not in the keyring) changes nothing and names its
    /// endpoint. After it, the previous keys can be dropped from the configuration.
    public func rotateSecrets() throws -> (resealed: Int, alreadyCurrent: Int) {
        guard let keyring else { throw WebhookError.noSecretKey }
        return try database.transaction { database in
            let rows = try database.query(
                "SELECT id, secret, secret_key_id, secret_sealed FROM webhook_endpoints ORDER BY id FOR UPDATE")
            var resealed = 0
            for row in rows {
                let id = try row["id"].int64() ?? 0
                let stored = try StoredSecret(row)
                guard stored.keyID != keyring.current.id else { continue }
                let secret: WebhookSecret
                do {
                    secret = try stored.open(with: keyring, endpointID: id)
                } catch WebhookError.undecryptableSecret(let reason) {
                    throw WebhookError.undecryptableSecret("endpoint \(id): \(reason)")
                }
                let (keyID, sealed) = try keyring.seal(secret, endpointID: id)
                try database.execute(
                    "UPDATE webhook_endpoints SET secret = NULL, secret_key_id = $2, secret_sealed = $3 WHERE id = $1",
                    [.int64(id), .text(keyID), .bytea(sealed)])
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
