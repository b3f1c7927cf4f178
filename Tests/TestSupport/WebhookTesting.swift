import EventRelay
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
    /// `self` for the tests' receivers: loopback over plain http, secrets opened with the tests' key.
    public var local: WebhookConfiguration {
        var configuration = self
        configuration.secretKeys = .test
        configuration.allowsPrivateNetworks = true
        return configuration
    }
}
