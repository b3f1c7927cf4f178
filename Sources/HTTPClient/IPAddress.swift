#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// An IPv4 or IPv6 address, and whether it lies on the public internet. Used to keep requests
/// that strangers can aim (webhooks) away from the machine itself and the network around it.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), in network order.
    public let bytes: [UInt8]

    /// Reads a numeric address: dotted IPv4, or IPv6 with or without brackets and a zone (`%eth0`).
    /// Host names give nil; so do IPv4 forms such as `2130706433` that only `inet_aton` reads
    /// (resolving them, as `resolve` does, finds what they stand for).
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
    }

    /// The address of a `sockaddr_in` or `sockaddr_in6` at `socketAddress`; nil for other families.
    init?(socketAddress: UnsafeRawPointer, family: Int32) {
        switch family {
        case AF_INET:
            let address = socketAddress.loadUnaligned(as: sockaddr_in.self).sin_addr
            bytes = withUnsafeBytes(of: address) { Array($0) }
        case AF_INET6:
            let address = socketAddress.loadUnaligned(as: sockaddr_in6.self).sin6_addr
            bytes = withUnsafeBytes(of: address) { Array($0) }
        default:
            return nil
        }
    }

    /// Every address `host` resolves to (the system resolver, as curl uses it); empty when it
    /// does not resolve. Numeric hosts resolve to themselves.
    public static func resolve(_ host: String) -> [IPAddress] {
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, nil, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let current = entry?.pointee {
            if let address = current.ai_addr, let ip = IPAddress(socketAddress: address, family: current.ai_family),
                !addresses.contains(ip)
            {
                addresses.append(ip)
            }
            entry = current.ai_next
        }
        return addresses
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        return String(cString: text)
    }

    /// What kind of non-public address this is ("loopback", "private", …), or nil for a public one.
    public var nonPublicRange: String? {
        bytes.count == 4 ? Self.v4Range(bytes) : Self.v6Range(bytes)
    }

    /// IANA's special-purpose IPv4 blocks that a request must not reach.
    private static let v4Ranges: [(prefix: [UInt8], bits: Int, name: String)] = [
        ([0, 0, 0, 0], 8, "unspecified (\"this network\")"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "shared (carrier-grade NAT)"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "IETF protocol assignment"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "benchmarking"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([240, 0, 0, 0], 4, "reserved (or broadcast)"),
    ]

    private static let v6Ranges: [(prefix: [UInt8], bits: Int, name: String)] = [
        ([0, 0x64, 0xff, 0x9b, 0, 1], 48, "local-use NAT64"),
        ([0x01, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
        ([0xfc], 7, "unique-local"),
        ([0xfe, 0x80], 10, "link-local"),
        ([0xfe, 0xc0], 10, "site-local"),
        ([0xff], 8, "multicast"),
        ([0x20, 0x01, 0x0d, 0xb8], 32, "documentation"),
    ]

    private static func v4Range(_ bytes: [UInt8]) -> String? {
        v4Ranges.first { matches(bytes, $0.prefix, bits: $0.bits) }?.name
    }

    private static func v6Range(_ bytes: [UInt8]) -> String? {
        let zeros = [UInt8](repeating: 0, count: 10)
        if bytes == [UInt8](repeating: 0, count: 16) { return "unspecified" }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return "loopback" }
        // Forms that carry an IPv4 address, which the network may reach as that address:
        // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
        // NAT64 (64:ff9b::a.b.c.d; the local-use 64:ff9b:1::/48 is never public), 6to4 (2002:ab:cd::).
        if Array(bytes.prefix(10)) == zeros, bytes[10] == bytes[11], bytes[10] == 0 || bytes[10] == 0xff {
            return v4Range(Array(bytes.suffix(4))).map { "\($0) (as IPv6)" }
        }
        if Array(bytes.prefix(12)) == [UInt8](repeating: 0, count: 8) + [0xff, 0xff, 0, 0] {
            return v4Range(Array(bytes.suffix(4))).map { "\($0) (IPv4-translated)" }
        }
        if Array(bytes.prefix(12)) == [0, 0x64, 0xff, 0x9b] + [UInt8](repeating: 0, count: 8) {
            return v4Range(Array(bytes.suffix(4))).map { "\($0) (through NAT64)" }
        }
        if bytes[0] == 0x20, bytes[1] == 0x02 {
            return v4Range(Array(bytes[2..<6])).map { "\($0) (through 6to4)" }
        }
        return v6Ranges.first { matches(bytes, $0.prefix, bits: $0.bits) }?.name
    }

    /// Whether the first `bits` bits of `bytes` are those of `prefix`.
    private static func matches(_ bytes: [UInt8], _ prefix: [UInt8], bits: Int) -> Bool {
        for index in 0..<((bits + 7) / 8) {
            let kept = min(8, bits - index * 8)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - kept))
            if bytes[index] & mask != prefix[index] & mask { return false }
        }
        return true
    }
}
