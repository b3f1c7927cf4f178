/// How an `HTTPClient` connects: timeouts, TLS verification, the user agent, and how much of an
/// answer it reads.
public struct HTTPClientConfiguration: Sendable {
    /// The longest a request may wait for the TCP (and TLS) connection to be established.
    public var connectTimeout: Duration
    /// The longest a whole request may take, connecting included. When it passes, the request
    /// fails with `HTTPError.Kind.timeout`.
    public var totalTimeout: Duration
    /// Whether the server's certificate and host name are checked. Turn this off only for a
    /// test server: without it anyone on the path can read and change the traffic.
    public var verifiesTLS: Bool
    /// A PEM file of trusted CA certificates, used instead of the system's bundle.
    public var caFile: String?
    /// Sent as `User-Agent` unless a request sets that header itself.
    public var userAgent: String
    /// The most bytes of a response body kept; nil keeps the whole body. The client stops reading
    /// at the limit and closes the connection, so a server that sends an endless body costs
    /// neither memory nor the rest of the timeout; the response carries the first bytes only.
    public var maxBodyBytes: Int?
    /// Which proxy requests go through.
    public var proxy: Proxy
    /// Whether connections may go only to public internet addresses: each address curl is about to
    /// connect to, after resolving the host, is checked, and a loopback, private, link-local,
    /// unique-local, multicast or otherwise special one is refused (`HTTPError.Kind.refusedAddress`).
    /// Checking the resolved address, not the name, is what defeats a name that resolves inside the
    /// network (or starts to, after it was checked). With a proxy, the address checked is the proxy's.
    public var publicAddressesOnly: Bool

    public enum Proxy: Sendable, Equatable {
        /// What the environment says, as curl reads it: http_proxy, https_proxy, ALL_PROXY, NO_PROXY.
        case environment
        /// None, whatever the environment says.
        case none
        /// This proxy, e.g. http://proxy.internal:3128, whatever the environment says.
        case url(String)
    }

    public init(
        connectTimeout: Duration = .seconds(10),
        totalTimeout: Duration = .seconds(30),
        verifiesTLS: Bool = true,
        caFile: String? = nil,
        userAgent: String = "HTTPClient (libcurl)",
        maxBodyBytes: Int? = nil,
        proxy: Proxy = .environment,
        publicAddressesOnly: Bool = false
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.verifiesTLS = verifiesTLS
        self.caFile = caFile
        self.userAgent = userAgent
        self.maxBodyBytes = maxBodyBytes
        self.proxy = proxy
        self.publicAddressesOnly = publicAddressesOnly
    }
}

extension Duration {
    /// Whole milliseconds for curl, from 1 (curl reads 0 as "wait forever") to about 24 days.
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let milliseconds = Double(seconds) * 1_000 + Double(attoseconds) / 1e15
        return Int(min(max(milliseconds, 1), Double(Int32.max)))
    }
}
