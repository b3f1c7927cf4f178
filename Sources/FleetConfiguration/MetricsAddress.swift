/// Where a fleet process serves /metrics, /healthz and /readyz: a host (name, IPv4, or IPv6 in
/// brackets) and a port; port 0 lets the system pick a free one.
public struct MetricsAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// Loopback only: metrics tell a lot about a deployment, so reaching them from elsewhere is
    /// a choice (`0.0.0.0:9464` in a container, say).
    public static let standard = MetricsAddress(host: "127.0.0.1", port: 9464)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `HOST:PORT` or `[IPv6]:PORT`; nil for `off`. Throws a reason a person can act on.
    public static func parse(_ text: String) throws(MetricsAddressError) -> MetricsAddress? {
        if text.lowercased() == "off" { return nil }
        guard let colon = text.lastIndex(of: ":") else { throw MetricsAddressError(text: text) }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw MetricsAddressError(text: text)  // an IPv6 address needs its brackets
        }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw MetricsAddressError(text: text)
        }
        return MetricsAddress(host: host, port: port)
    }

    /// `host:port`, IPv6 hosts in brackets: the form `parse` reads.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct MetricsAddressError: Error, CustomStringConvertible {
    public let text: String

    public var description: String {
        "'\(text)' is not HOST:PORT with a port from 0 to 65535 (e.g. 127.0.0.1:9464, 0.0.0.0:9464, [::1]:9464; "
            + "port 0 picks a free one), nor off"
    }
}
