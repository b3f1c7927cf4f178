/// How a `WebhookDispatcher` delivers: the deployment's settings (`FleetSettings.webhookConfiguration`),
/// and the dispatcher's own constants beside their fields.
public struct WebhookConfiguration: Sendable {
    /// The wait before each retry: the first entry after the first failed attempt, and so on. When
    /// they are used up, the next failure fails the delivery for good. The Standard Webhooks
    /// schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (eight attempts over about 28 h). A
    /// longer `Retry-After` from the receiver wins, up to the longest entry.
    public var retryDelays: [Duration] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000].map { .seconds($0) }
    /// The longest one request may take, connecting included.
    public var timeout: Duration = .seconds(15)
    /// How often the dispatcher looks for due deliveries when it found none.
    public var pollInterval: Duration = .seconds(1)
    /// The most attempts one `runOnce` makes.
    public var batchSize = 50
    /// Sent as `User-Agent`.
    public var userAgent = "ReceiptFleet-Webhooks/1"
    /// The most requests to one endpoint in flight at once, over all dispatchers
    /// (`webhook-endpoint-concurrency`): a receiver that stops answering holds no more dispatchers
    /// than this, and a healthy one gets this many requests side by side. Run more dispatchers than
    /// this, or one such receiver stalls them all.
    public var perEndpointConcurrency: Int
    /// Opens the endpoints' secrets, which are stored encrypted; without it nothing can be signed.
    public var secretKeys: WebhookKeyring?
    /// Whether deliveries may go to loopback, private and other non-public addresses, and over plain
    /// http (`--allow-private-webhooks`, for development and tests). Otherwise every address a
    /// receiver's name resolves to is checked as the connection is made (`HTTPClient`'s
    /// `publicAddressesOnly`), so a name that resolves inside the network is refused at delivery too.
    public var allowsPrivateNetworks: Bool
    /// The proxy every delivery goes through (`webhook-proxy`); nil goes direct. Proxy variables in
    /// the environment (http_proxy, https_proxy, ALL_PROXY) are ignored either way: they are set for
    /// the fleet's other traffic, and an internal proxy would reach what the address check keeps out.
    /// Through a configured proxy, the proxy connects, so it must do the address checks itself.
    public var proxy: String?

    public init(perEndpointConcurrency: Int, secretKeys: WebhookKeyring?, allowsPrivateNetworks: Bool, proxy: String?) {
        self.perEndpointConcurrency = perEndpointConcurrency
        self.secretKeys = secretKeys
        self.allowsPrivateNetworks = allowsPrivateNetworks
        self.proxy = proxy
    }

    /// How long a claimed delivery stays the claiming dispatcher's: longer than any attempt (the
    /// request's timeout, plus a minute for the claim and the record), so a live dispatcher always
    /// records in time, and a dead one's delivery is due again after it.
    public var lease: Duration { timeout + .seconds(60) }

    func validate() throws(WebhookError) {
        guard retryDelays.allSatisfy({ $0 >= .zero }) else {
            throw .invalidConfiguration("retry delays must not be negative")
        }
        guard timeout > .zero, pollInterval > .zero else {
            throw .invalidConfiguration("the timeout and the poll interval must be positive")
        }
        guard batchSize > 0 else { throw .invalidConfiguration("the batch size must be at least 1") }
        guard perEndpointConcurrency > 0 else {
            throw .invalidConfiguration("the concurrency per endpoint must be at least 1")
        }
    }
}
