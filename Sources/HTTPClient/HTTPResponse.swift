/// A complete answer from a server. Any status counts as an answer: a 500 is a response,
/// not an `HTTPError`, so the caller decides what each status means.
public struct HTTPResponse: Sendable {
    /// The HTTP status code, such as 200.
    public var status: Int
    /// The final response's header fields (interim 1xx responses are left out).
    public var headers: HTTPHeaders
    public var body: [UInt8]
    public var timings: HTTPTimings
    /// The URL that answered. It may hold a query string: do not log it.
    public var url: String
}

/// Where the time of one request went, as curl measured it. Each value runs from the start of
/// the request to the end of that phase, so later phases include earlier ones. A phase that did
/// not happen reads zero: the TLS handshake over plain HTTP, and the name lookup and connect on
/// a reused keep-alive connection.
public struct HTTPTimings: Sendable, Equatable {
    /// Until the host name was resolved.
    public var nameLookup: Duration
    /// Until the TCP connection was established.
    public var connect: Duration
    /// Until the TLS handshake finished; zero for plain HTTP.
    public var tlsHandshake: Duration
    /// Until the first byte of the response arrived.
    public var firstByte: Duration
    /// The whole request.
    public var total: Duration
}
