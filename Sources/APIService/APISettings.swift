import AccessTokens
import AppStore
import Foundation
import X509

/// Everything `receiptfleet serve` needs beyond the fleet's own settings.
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
    public var appleWait: Duration

    public init(
        host: String = "127.0.0.1", port: Int = 8080, tokens: NamedTokens,
        notificationEnvironments: Set<AppStoreEnvironment> = [.production], trustedRoots: [Certificate] = [],
        maxBodyBytes: Int = 1 << 20, clientRateLimit: Double = 20, clientRateBurst: Int = 40,
        notificationRateLimit: Double = 100, notificationRateBurst: Int = 200, trustedProxies: TrustedProxies = .none, lanes: Int = 4,
        appleWait: Duration = .seconds(10)
    ) {
        self.host = host
        self.port = port
        self.tokens = tokens
        self.notificationEnvironments = notificationEnvironments
        self.trustedRoots = trustedRoots
        self.maxBodyBytes = maxBodyBytes
        self.clientRateLimit = clientRateLimit
        self.clientRateBurst = clientRateBurst
        self.notificationRateLimit = notificationRateLimit
        self.notificationRateBurst = notificationRateBurst
        self.trustedProxies = trustedProxies
        self.lanes = lanes
        self.appleWait = appleWait
    }
}
