/// How an `HTTPClient` connects: timeouts, TLS verification and the user agent.
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

    public init(
        connectTimeout: Duration = .seconds(10),
        totalTimeout: Duration = .seconds(30),
        verifiesTLS: Bool = true,
        caFile: String? = nil,
        userAgent: String = "HTTPClient (libcurl)"
    ) {
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.verifiesTLS = verifiesTLS
        self.caFile = caFile
        self.userAgent = userAgent
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
