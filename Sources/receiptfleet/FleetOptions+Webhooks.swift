import EventRelay
import Fleet
import Foundation
import Redaction

extension ResolvedConfiguration {
    /// allow-private-webhooks, webhook-proxy, webhook-secret-key and webhook-secret-previous-keys.
    func applyWebhookSettings(to settings: inout FleetSettings) throws {
        settings.allowPrivateWebhooks = try self[Settings.allowPrivateWebhooks]
        settings.webhookProxy = try self[Settings.webhookProxy]
        if !isSet(Settings.webhookSecretKey), isSet(Settings.webhookSecretPreviousKeys) {
            throw ConfigurationError(
                key: "webhook-secret-previous-keys", source: source(of: Settings.webhookSecretPreviousKeys),
                reason: "set without webhook-secret-key, the current key")
        }
        settings.webhookSecretKeys = try self[Settings.webhookSecretKey]
    }
}

extension Rule where Value == String {
    static var proxyURL: Rule {
        Rule("a proxy URL") { proxy, _ in
            guard let components = URLComponents(string: proxy), components.scheme != nil, components.host?.isEmpty == false else {
                throw Refusal("not a proxy URL such as http://egress.internal:3128")
            }
            return proxy
        }
        .showing { Redact.url($0) }
    }
}

extension Rule where Value == WebhookKeyring {
    /// The current key, with webhook-secret-previous-keys.
    static var webhookKeyring: Rule {
        .converting("the base64 of 32 bytes") { key, configuration in
            try WebhookKeyring(current: key, previous: configuration[Settings.webhookSecretPreviousKeys])
        }
    }
}
