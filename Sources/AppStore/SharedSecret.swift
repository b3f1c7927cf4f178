/// The app's App Store shared secret, sent to verifyReceipt as `password`. It prints redacted,
/// so it cannot reach a log, an error or a metric by accident.
public struct SharedSecret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The secret itself; read it only to send it to Apple.
    public let value: String

    public init(_ value: String) { self.value = value }

    public var description: String { "<shared secret, redacted>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
