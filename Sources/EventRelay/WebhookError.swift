import AppStore

/// What can go wrong administering or delivering webhooks. No case carries a secret or a whole URL
/// (URLs may hold tokens).
public enum WebhookError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The endpoint URL is unusable; the text says why.
    case invalidURL(String)
    /// The endpoint URL is outside the destination policy (a private address, plain http); the text says why.
    case refusedURL(String)
    /// Webhook secrets are encrypted at rest, and no `webhook-secret-key` is configured.
    case noSecretKey
    /// A stored secret cannot be decrypted with the configured keys; the text says why.
    case undecryptableSecret(String)
    /// Names that are not event types.
    case unknownEventTypes([String])
    /// No endpoint has this id.
    case unknownEndpoint(Int64)
    /// The endpoint is disabled: nothing is delivered to it.
    case disabledEndpoint(Int64)
    /// A stored or given secret is not `whsec_` followed by base64.
    case malformedSecret
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .invalidURL(let reason):
            "invalid webhook URL: \(reason). Give an absolute http:// or https:// URL with a host."
        case .refusedURL(let reason):
            "refused webhook URL: \(reason). Webhooks go only to public internet addresses over https; for "
                + "development and tests, --allow-private-webhooks (RECEIPTFLEET_ALLOW_PRIVATE_WEBHOOKS=true) allows "
                + "private and loopback addresses and plain http."
        case .noSecretKey:
            "no webhook-secret-key is configured: webhook secrets are stored encrypted with it. Set "
                + "RECEIPTFLEET_WEBHOOK_SECRET_KEY (or \"webhook-secret-key\" in the configuration file) to the "
                + "output of `openssl rand -base64 32`, the same for every process; see docs/webhooks.md."
        case .undecryptableSecret(let reason):
            "the webhook secret cannot be decrypted: \(reason). See \"Rotating the key\" in docs/webhooks.md."
        case .unknownEventTypes(let names):
            "unknown event types: \(names.joined(separator: ", ")). Known types: "
                + SubscriptionEventType.allCases.map(\.rawValue).joined(separator: ", ") + "; give none to receive all."
        case .unknownEndpoint(let id):
            "no webhook endpoint has id \(id); `receiptfleet webhooks list` shows them."
        case .disabledEndpoint(let id):
            "webhook endpoint \(id) is disabled, so nothing would be delivered to it; add its URL again to receive events."
        case .malformedSecret:
            "the webhook secret is not in the form whsec_<base64>; remove the endpoint and add it again."
        case .invalidConfiguration(let reason):
            "invalid webhook configuration: \(reason)"
        }
    }
}
