import AppStore
import AppStoreClients
import JobQueue

/// How the fleet reaches the App Store Server API: the In-App Purchase key (with its issuer id, key
/// id and the app's bundle id), the hosts, and the roots Apple's signed answers must chain to.
public struct ServerAPISettings: Sendable {
    public var key: ServerAPIKey
    public var endpoints: ServerAPIEndpoints
    /// Apple Root CA - G3 unless an operator named another root (a test CA).
    public var signatures: SignedPayloadVerifier
    /// Each endpoint's requests per second, fleet-wide (Apple limits each on its own); nil: the
    /// fleet's `rateLimit`.
    public var rateLimit: RateLimit?

    public init(
        key: ServerAPIKey, endpoints: ServerAPIEndpoints = .apple, signatures: SignedPayloadVerifier, rateLimit: RateLimit? = nil
    ) {
        self.key = key
        self.endpoints = endpoints
        self.signatures = signatures
        self.rateLimit = rateLimit
    }
}
