import AppStore

/// What can go wrong administering or delivering webhooks. No case carries a secret or a whole URL
/// (URLs may hold tokens).
public enum WebhookError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The endpoint URL is unusable; the text says why.
    case invalidURL(String)
    /// Names that are not event types.
    case unknownEventTypes([String])
    /// No endpoint has this id.
    case unknownEndpoint(Int64)
    /// A stored or given secret is not `whsec_` followed by base64.
    case malformedSecret
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .invalidURL(let reason):
            "invalid webhook URL: \(reason). Give an absolute http:// or https:// URL with a host."
        case .unknownEventTypes(let names):
            "unknown event types: \(names.joined(separator: ", ")). Known types: "
                + SubscriptionEventType.allCases.map(\.rawValue).joined(separator: ", ") + "; give none to receive all."
        case .unknownEndpoint(let id):
            "no webhook endpoint has id \(id); `receiptfleet webhooks list` shows them."
        case .malformedSecret:
            "the webhook secret is not in the form whsec_<base64>; remove the endpoint and add it again."
        case .invalidConfiguration(let reason):
            "invalid webhook configuration: \(reason)"
        }
    }
}
