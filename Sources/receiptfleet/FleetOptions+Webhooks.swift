import EventRelay
import Fleet
import Foundation

extension ResolvedConfiguration {
    /// allow-private-webhooks, webhook-proxy, webhook-secret-key and webhook-secret-previous-keys.
    func applyWebhookSettings(to settings: inout FleetSettings) throws {
        settings.allowPrivateWebhooks = try boolean("allow-private-webhooks", default: false)
        if let (proxy, source) = value("webhook-proxy") {
            guard let components = URLComponents(string: proxy), components.scheme != nil, components.host?.isEmpty == false else {
                throw ConfigurationError(key: "webhook-proxy", source: source, reason: "not a proxy URL such as http://egress.internal:3128")
            }
            settings.webhookProxy = proxy
        }
        guard let (key, source) = value("webhook-secret-key") else {
            if let (_, source) = value("webhook-secret-previous-keys") {
                throw ConfigurationError(
                    key: "webhook-secret-previous-keys", source: source, reason: "set without webhook-secret-key, the current key")
            }
            return
        }
        let previous = (value("webhook-secret-previous-keys")?.value ?? "").split(separator: ",").map(String.init)
        do {
            settings.webhookSecretKeys = try WebhookKeyring(current: key, previous: previous)
        } catch {
            throw ConfigurationError(key: "webhook-secret-key", source: source, reason: error.description)
        }
    }

    /// true, 1 or yes; false, 0 or no (a JSON file's true reads as 1).
    func boolean(_ key: String, default fallback: Bool) throws -> Bool {
        guard let (text, source) = value(key) else { return fallback }
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw ConfigurationError(key: key, source: source, reason: "'\(text)' is not true or false")
        }
    }
}
