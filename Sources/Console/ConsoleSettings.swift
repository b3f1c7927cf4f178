import AccessTokens

/// What the ops console needs beyond the fleet's own settings.
public struct ConsoleSettings: Sendable {
    /// Who may log in: operator tokens, never the API's.
    public var operators: NamedTokens
    /// Mark the session cookie Secure: set it when the console is reached over TLS (a proxy in front).
    public var secureCookies: Bool
    /// How long a login lasts.
    public var sessionLifetime: Duration
    /// How often a sample of the fleet is taken for the charts (one per period across all replicas).
    public var sampleInterval: Duration
    /// The ledger's app whose subscriptions an operator looks up by original_transaction_id.
    public var app: String
    /// Threads with their own Redis and PostgreSQL connections serving the pages.
    public var lanes: Int

    public init(
        operators: NamedTokens, secureCookies: Bool = false, sessionLifetime: Duration = .seconds(12 * 3_600),
        sampleInterval: Duration = .seconds(10), app: String = "default", lanes: Int = 2
    ) {
        self.operators = operators
        self.secureCookies = secureCookies
        self.sessionLifetime = sessionLifetime
        self.sampleInterval = sampleInterval
        self.app = app
        self.lanes = lanes
    }
}
