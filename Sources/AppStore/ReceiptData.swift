import Crypto

/// A base64 App Store receipt: a secret, like a password.
///
/// Printing, interpolating or dumping it shows only its length, so it cannot reach a log or an
/// error message by accident. Its JSON form is the plain base64 string, for storage; an encoder
/// whose `userInfo[ReceiptData.redactInJSON]` is `true` writes the redacted description instead,
/// for JSON meant for people (e.g. `receiptfleet inspect --state`).
public struct ReceiptData: Sendable, Hashable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The receipt itself; read it only to send it to Apple or to store it.
    public let base64: String

    public init(base64: String) { self.base64 = base64 }

    /// SHA-256 of the base64 text, in hex: how the ledger recognises a receipt without keeping it.
    public var sha256Hex: String {
        SHA256.hash(data: Array(base64.utf8)).hex
    }

    /// Set this `userInfo` key to `true` on a `JSONEncoder` to write receipts redacted.
    public static let redactInJSON = CodingUserInfoKey(rawValue: "receiptfleet.redactReceipts")!

    public init(from decoder: any Decoder) throws {
        base64 = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(encoder.userInfo[Self.redactInJSON] as? Bool == true ? description : base64)
    }

    public var description: String { "<receipt, \(base64.utf8.count) bytes, redacted>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
