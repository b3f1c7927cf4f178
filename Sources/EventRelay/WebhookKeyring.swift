import AppStore
import Crypto
import Foundation

/// The keys that encrypt webhook secrets at rest (AES-256-GCM): the current one, which seals every
/// new secret, and previous ones, which still open secrets sealed before a rotation until
/// `WebhookRegistry.rotateSecrets` has sealed them again under the current key.
///
/// A key is given as the base64 of 32 random bytes (`openssl rand -base64 32`). Its id, stored
/// beside each sealed secret, is derived from the key (the first 6 bytes of its SHA-256, in hex),
/// so operators never name keys and a secret always says which key opens it. Printing a keyring
/// shows the ids only.
public struct WebhookKeyring: Sendable, CustomStringConvertible {
    public let current: Key
    public let previous: [Key]

    public struct Key: Sendable {
        public let id: String
        fileprivate let key: SymmetricKey

        /// Reads the base64 of 32 bytes; nil for anything else.
        init?(base64 text: String) {
            guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespaces)), bytes.count == 32 else {
                return nil
            }
            key = SymmetricKey(data: bytes)
            id = Array(SHA256.hash(data: bytes).prefix(6)).hex
        }
    }

    /// `current` and each of `previous`: base64 of 32 bytes. Throws `invalidConfiguration` naming
    /// which one is malformed, never quoting it.
    public init(current: String, previous: [String] = []) throws(WebhookError) {
        guard let key = Key(base64: current) else {
            throw .invalidConfiguration("the webhook secret key is not the base64 of 32 bytes (openssl rand -base64 32)")
        }
        var others: [Key] = []
        for (index, text) in previous.enumerated() {
            guard let key = Key(base64: text) else {
                throw .invalidConfiguration("previous webhook secret key \(index + 1) is not the base64 of 32 bytes")
            }
            others.append(key)
        }
        self.current = key
        self.previous = others
    }

    public var description: String {
        "current key \(current.id)" + (previous.isEmpty ? "" : ", previous \(previous.map(\.id).joined(separator: ", "))")
    }

    /// The secret's text sealed under the current key. The endpoint's id is authenticated with it,
    /// so a sealed secret copied onto another endpoint's row does not open there.
    func seal(_ secret: WebhookSecret, endpointID: Int64) throws -> (keyID: String, sealed: Data) {
        // A fresh random 12-byte nonce each time, so the combined form (nonce, ciphertext, tag) always exists.
        let box = try AES.GCM.seal(Data(secret.text.utf8), using: current.key, authenticating: Self.context(endpointID))
        return (current.id, box.combined!)
    }

    /// Opens a secret sealed under the key `keyID`, the current one or a previous one.
    func open(_ sealed: [UInt8], keyID: String, endpointID: Int64) throws(WebhookError) -> WebhookSecret {
        guard let key = ([current] + previous).first(where: { $0.id == keyID }) else {
            throw .undecryptableSecret(
                "it is sealed under key \(keyID), which is neither webhook-secret-key (\(current.id)) nor among "
                    + "webhook-secret-previous-keys")
        }
        let text: Data
        do {
            text = try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key.key, authenticating: Self.context(endpointID))
        } catch {
            throw .undecryptableSecret("it does not open under key \(keyID): the stored value is damaged")
        }
        return try WebhookSecret(String(decoding: text, as: UTF8.self))
    }

    private static func context(_ endpointID: Int64) -> Data {
        Data("receiptfleet webhook secret of endpoint \(endpointID)".utf8)
    }
}
