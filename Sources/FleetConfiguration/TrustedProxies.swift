import Foundation

/// The header a trusted proxy names the caller in (`trusted-proxy-header`): only that one is read.
/// A proxy that appends only `X-Forwarded-For` (nginx, AWS's load balancers) passes a client's own
/// `Forwarded` through untouched, so reading both would let the client name itself.
public enum ForwardedHeader: String, Sendable, CaseIterable {
    case xForwardedFor = "x-forwarded-for"
    /// RFC 7239's `Forwarded: for=…`.
    case forwarded
}

/// The proxies whose word about the caller's address is believed: a TLS terminator or load
/// balancer in front of `serve`. Only a request whose peer is one of them has its `header` read;
/// anyone else could write any address there.
public struct TrustedProxies: Sendable, Equatable {
    struct Network: Sendable, Equatable {
        let address: [UInt8]
        let prefixLength: Int

        func contains(_ other: [UInt8]) -> Bool {
            guard other.count == address.count else { return false }
            var remaining = prefixLength
            for (a, b) in zip(address, other) where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if a & mask != b & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    let networks: [Network]
    /// The one header the proxies name the caller in.
    public let header: ForwardedHeader

    public static let none = TrustedProxies(networks: [], header: .xForwardedFor)

    init(networks: [Network], header: ForwardedHeader) {
        self.networks = networks
        self.header = header
    }

    /// Reads "CIDR,CIDR…" (an address alone is a /32 or /128), e.g. "10.0.0.0/8,::1", for proxies
    /// that name the caller in `header`.
    public init(parsing text: String, header: ForwardedHeader = .xForwardedFor) throws(TrustedProxiesError) {
        self.header = header
        var networks: [Network] = []
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let parts = item.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let address = Self.bytes(of: String(parts[0])) else { throw TrustedProxiesError(item: item) }
            let length = parts.count == 2 ? Int(parts[1]) : address.count * 8
            guard let length, (0...(address.count * 8)).contains(length) else { throw TrustedProxiesError(item: item) }
            networks.append(Network(address: address, prefixLength: length))
        }
        self.networks = networks
    }

    public func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The caller's address: the peer's, or, while the address in hand is a trusted proxy, the
    /// one that proxy says it forwarded for (the nearest entry of `header`, walking back from the
    /// right: the rightmost untrusted hop). A client cannot skip past an untrusted hop, and the
    /// other header, which the proxies do not write, is never read.
    public func client(peer: String?, forwarded: String?, xForwardedFor: String?) -> String? {
        guard var current = peer else { return nil }
        var hops = switch header {
        case .forwarded: forwarded.map(Self.forwardedFor) ?? []
        case .xForwardedFor: xForwardedFor.map(Self.list) ?? []
        }
        while contains(current), let next = hops.popLast() { current = next }
        return current
    }

    private static func list(_ header: String) -> [String] {
        header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The `for=` addresses of RFC 7239 `Forwarded`, unquoted, IPv6 brackets and ports removed.
    private static func forwardedFor(_ header: String) -> [String] {
        list(header).compactMap { element in
            element.split(separator: ";").lazy.map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.lowercased().hasPrefix("for=") }
                .map { value in
                    var node = value.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    if node.hasPrefix("["), let close = node.firstIndex(of: "]") {
                        node = String(node[node.index(after: node.startIndex)..<close])
                    } else if node.filter({ $0 == ":" }).count == 1, let colon = node.firstIndex(of: ":") {
                        node = String(node[..<colon])  // IPv4 with a port
                    }
                    return node
                }
        }
    }

    static func bytes(of address: String) -> [UInt8]? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        if inet_pton(AF_INET6, address, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}

public struct TrustedProxiesError: Error, CustomStringConvertible {
    public let item: String
    public var description: String { "'\(item)' is not an IP address or CIDR network (e.g. 10.0.0.0/8, 127.0.0.1, fd00::/8)" }
}
