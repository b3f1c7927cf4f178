import Foundation

/// Whose wrong logins count together. An IPv4 address is one caller; an IPv6 caller usually holds
/// a whole /64 (one customer's prefix), so every address in it counts as one, or a guesser would
/// take a fresh address for every ten tries.
enum LoginAddress {
    static func bucket(_ address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let prefix = stride(from: 0, to: 8, by: 2).map { String(format: "%x", UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1])) }
        return prefix.joined(separator: ":") + "::/64"
    }
}
