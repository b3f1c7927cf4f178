import PostgresClient

/// An endpoint's secret as `webhook_endpoints` holds it: sealed under a key of the keyring
/// (`secret_key_id`, `secret_sealed`), or, for endpoints added before migration 10, the plaintext
/// `secret` until `WebhookRegistry.rotateSecrets` seals it.
enum StoredSecret {
    case sealed(keyID: String, [UInt8])
    case plaintext(String)

    /// Reads the `secret`, `secret_key_id` and `secret_sealed` columns of `row`.
    init(_ row: PostgresRow) throws {
        if let keyID = try row["secret_key_id"].text(), let sealed = try row["secret_sealed"].bytea() {
            self = .sealed(keyID: keyID, Array(sealed))
        } else {
            self = .plaintext(try row["secret"].text() ?? "")
        }
    }

    /// Reads the `previous_secret_key_id` and `previous_secret_sealed` columns of `row`: the secret
    /// a rotation keeps signing beside the new one (migration 14), or nil.
    init?(previousIn row: PostgresRow) throws {
        guard let keyID = try row["previous_secret_key_id"].text(), let sealed = try row["previous_secret_sealed"].bytea() else {
            return nil
        }
        self = .sealed(keyID: keyID, Array(sealed))
    }

    var keyID: String? {
        if case .sealed(let keyID, _) = self { keyID } else { nil }
    }

    /// The secret itself. A plaintext one from before encryption still signs, so that deliveries
    /// go on between the upgrade and `webhooks rotate-key`.
    func open(with keyring: WebhookKeyring?, endpointID: Int64) throws(WebhookError) -> WebhookSecret {
        switch self {
        case .plaintext(let text):
            return try WebhookSecret(text)
        case .sealed(let keyID, let sealed):
            guard let keyring else { throw .noSecretKey }
            return try keyring.open(sealed, keyID: keyID, endpointID: endpointID)
        }
    }
}
