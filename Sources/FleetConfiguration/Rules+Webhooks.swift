import EventRelay
import Foundation
import Redaction

extension ResolvedConfiguration {
    /// allow-private-webhooks, webhook-proxy, and the keyring of webhook-secret-key and
    /// webhook-secret-previous-keys.
    func webhookSettings() throws -> (allowPrivate: Bool, proxy: String?, keys: WebhookKeyring?) {
        if !isSet(Settings.webhookSecretKey), isSet(Settings.webhookSecretPreviousKeys) {
            throw ConfigurationError(
                key: "webhook-secret-previous-keys", source: source(of: Settings.webhookSecretPreviousKeys),
                reason: "set without webhook-secret-key, the current key")
        }
        return try (self[Settings.allowPrivateWebhooks], self[Settings.webhookProxy], self[Settings.webhookSecretKey])
    }
}

extension Rule where Value == String {
    public static var proxyURL: Rule {
        Rule("a proxy URL") { proxy, _ in
            guard let components = URLComponents(string: proxy), components.scheme != nil, components.host?.isEmpty == false else {
                throw InvalidValue("not a proxy URL such as http://egress.internal:3128")
            }
            return proxy
        }
        .showing { Redact.url($0) }
    }
}

extension Rule where Value == WebhookKeyring {
    /// The current key, with webhook-secret-previous-keys.
    public static var webhookKeyring: Rule {
        .converting("the base64 of 32 bytes") { key, configuration in
            try WebhookKeyring(current: key, previous: configuration[Settings.webhookSecretPreviousKeys])
        }
    }
}
