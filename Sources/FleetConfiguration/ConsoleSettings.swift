import AccessTokens

/// What the ops console needs beyond the fleet's own settings.
public struct ConsoleSettings: Sendable {
    /// Who may log in: operator tokens, never the API's.
    public var operators: NamedTokens
    /// Mark the session cookie Secure: set it when the console is reached over TLS (a proxy in front).
    public var secureCookies: Bool
    /// The proxies whose header names the caller of `receiptfleet console` (under `serve`, the API's
    /// own decide): wrong logins are counted by the caller's address, not the proxy's.
    public var trustedProxies: TrustedProxies
    /// How long a login lasts.
    public var sessionLifetime: Duration = .seconds(12 * 3_600)
    /// How often a sample of the fleet is taken for the charts (one per period across all replicas).
    public var sampleInterval: Duration = .seconds(10)
    /// The ledger's app whose subscriptions an operator looks up by original_transaction_id.
    public var app = AppCatalog.defaultAppName
    /// Threads with their own Redis and PostgreSQL connections serving the pages.
    public var lanes = 2
    /// How long a request may take to arrive whole, as the API's (`APISettings.requestDeadline`).
    public var requestDeadline: Duration = .seconds(30)
    /// The most callers' connections held at once (`ConnectionCap`); nil: as many as the process's
    /// descriptor limit allows, less what it keeps for its own (`DescriptorLimit.connectionCap`).
    public var maxConnections: Int?

    /// The console's settings as `configuration` resolves them; nil when no operator token is
    /// configured (serve then mounts no console).
    public init?(_ configuration: ResolvedConfiguration) throws {
        guard let operators = try configuration[Settings.consoleTokens] else { return nil }
        self.operators = operators
        secureCookies = try configuration[Settings.consoleSecureCookies]
        trustedProxies = try configuration.trustedProxies()
    }
}
