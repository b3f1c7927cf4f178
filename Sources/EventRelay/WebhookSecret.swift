import Crypto
import Foundation

/// The key an endpoint's deliveries are signed with, in the Standard Webhooks form
/// `whsec_<base64 of the key bytes>`. Printing, dumping or interpolating it shows `whsec_***`;
/// only `text` reveals it (for the CLI to show once, and for storage).
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The whole secret, `whsec_` prefix included.
    public let text: String
    /// The HMAC key: the base64-decoded part after the prefix.
    private let key: [UInt8]

    private static let prefix = "whsec_"

    /// Reads a secret in the `whsec_<base64>` form.
    public init(_ text: String) throws(WebhookError) {
        guard text.hasPrefix(Self.prefix), let key = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
            !key.isEmpty
        else { throw .malformedSecret }
        self.text = text
        self.key = Array(key)
    }

    /// A new secret of 32 random bytes from the system's cryptographic generator.
    public static func generate() -> WebhookSecret {
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        return WebhookSecret(text: prefix + Data(key).base64EncodedString(), key: key)
    }

    private init(text: String, key: [UInt8]) {
        self.text = text
        self.key = key
    }

    /// The `webhook-signature` header value: `v1,` then the base64 HMAC-SHA256 of
    /// `<id>.<timestamp>.<body>` under the key.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))
        return "v1," + Data(mac).base64EncodedString()
    }

    public var description: String { Self.prefix + "***" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
