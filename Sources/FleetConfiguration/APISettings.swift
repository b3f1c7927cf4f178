import AccessTokens
import AppStore
import Foundation
import X509

/// Everything `receiptfleet serve` needs beyond the fleet's own settings, read from the registry.
public struct APISettings: Sendable {
    public var host: String
    /// 0 picks a free port (the server reports the one it bound).
    public var port: Int
    public var tokens: NamedTokens
    /// Notifications for other environments are acknowledged and ignored.
    public var notificationEnvironments: Set<AppStoreEnvironment>
    /// The roots a V2 notification's x5c chain must lead to: Apple Root CA - G3
    /// (`AppleRootCertificate`) unless an operator explicitly names another.
    /// Empty: V2 notifications are refused with 503 (Apple keeps re-sending them meanwhile).
    public var trustedRoots: [Certificate]
    /// The largest request body accepted, in bytes.
    public var maxBodyBytes: Int
    /// Requests per second per client, and how many may come at once.
    public var clientRateLimit: Double
    public var clientRateBurst: Int
    /// Apple's authenticated notifications per second, and how many at once: a budget of their own.
    public var notificationRateLimit: Double
    public var notificationRateBurst: Int
    /// The proxies whose `Forwarded` / `X-Forwarded-For` name the caller's address.
    public var trustedProxies: TrustedProxies
    /// Lanes (threads, each with Redis, PostgreSQL and HTTP connections) serving the requests.
    public var lanes: Int
    /// How long a registration may wait for the fleet's rate limiter before answering 503.
    public var appleWait: Duration = .seconds(10)
    /// How long a request may take to arrive whole (its headers, then its body): a caller that
    /// never finishes one holds its connection no longer. Apple and an app's back end send theirs in
    /// well under a second.
    public var requestDeadline: Duration = .seconds(30)
    /// The most callers' connections held at once (`ConnectionCap`); nil: as many as the process's
    /// descriptor limit allows, less what it keeps for its own (`DescriptorLimit.connectionCap`).
    public var maxConnections: Int?

    /// serve's settings as `configuration` resolves them; API tokens are required.
    public init(_ configuration: ResolvedConfiguration) throws {
        let address = try configuration[Settings.address]
        guard let tokens = try configuration[Settings.apiTokens] else {
            throw ConfigurationError(key: "api-tokens", source: "default", reason:
                "serve needs API tokens: set RECEIPTFLEET_API_TOKENS=NAME:TOKEN[,NAME:TOKEN…] or name a file with api-tokens-file")
        }
        (host, port, self.tokens) = (address.host, address.port, tokens)
        notificationEnvironments = try configuration[Settings.notificationEnvironments]
        trustedRoots = try configuration.trustedRoots()
        maxBodyBytes = try configuration[Settings.maxBodyBytes]
        clientRateLimit = try configuration[Settings.clientRateLimit]
        clientRateBurst = try configuration[Settings.clientRateBurst]
        notificationRateLimit = try configuration[Settings.notificationRateLimit]
        notificationRateBurst = try configuration[Settings.notificationRateBurst]
        trustedProxies = try configuration.trustedProxies()
        lanes = try configuration[Settings.lanes]
    }
}

extension ResolvedConfiguration {
    /// The proxies whose header names the caller (`trusted-proxies`, `trusted-proxy-header`): for
    /// `serve` and `console` alike, which count wrong logins by the caller's address.
    func trustedProxies() throws -> TrustedProxies {
        try self[Settings.trustedProxies].map { try TrustedProxies(parsing: $0, header: self[Settings.trustedProxyHeader]) } ?? .none
    }
}
