import EventRelay
import FleetConfiguration
import PostgresClient

extension WebhookKeyring {
    /// The base64 of the tests' key for webhook secrets: fixed, so that processes a test starts share it.
    public static let testKeyText = "cmVjZWlwdGZsZWV0LXRlc3Qtd2ViaG9vay1rZXktMzI="
    /// The tests' keyring: `testKeyText` alone.
    public static let test = try! WebhookKeyring(current: testKeyText)
}

extension WebhookRegistry {
    /// A registry as the tests need it: receivers on loopback over plain http, secrets sealed with
    /// the tests' key.
    public static func local(_ database: PostgresConnection) -> WebhookRegistry {
        WebhookRegistry(database: database, keyring: .test, allowsPrivateNetworks: true)
    }
}

extension WebhookConfiguration {
    /// The deployment's defaults for the tests' receivers: loopback over plain http, secrets opened
    /// with the tests' key; changed by `change`.
    public static func local(_ change: (inout WebhookConfiguration) -> Void = { _ in }) -> WebhookConfiguration {
        var configuration = try! FleetSettings(.given([Settings.allowPrivateWebhooks: "true"])).webhookConfiguration
        configuration.secretKeys = .test
        change(&configuration)
        return configuration
    }
}
