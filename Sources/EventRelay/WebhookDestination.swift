import Foundation
import HTTPClient
import Redaction

/// Where a webhook may go. Anyone who can add an endpoint would otherwise make the fleet send
/// requests from inside the network: to a cloud's metadata service (169.254.169.254), to the
/// machine's own services, or to private hosts. By default only https to public internet addresses
/// is allowed; `allowsPrivateNetworks` (`--allow-private-webhooks`) allows every address and plain
/// http, for development and tests.
enum WebhookDestination {
    /// RFC 3986's reserved and unreserved characters besides letters and digits, and `%` for escapes.
    static let uriCharacters = Set("-._~:/?#[]@!$&'()*+,;=%".unicodeScalars)

    /// Throws `refusedURL` (or `invalidURL`) for a URL outside the policy. With `resolving`, a host
    /// name is looked up and every address it resolves to must be public (a name that does not
    /// resolve yet passes: the check at delivery catches it if it ever resolves inside). The error
    /// names the host and the address, never the rest of the URL, which may hold a token.
    /// `adding`: also refuse credentials in the URL, which is then stored and shown as it is (an
    /// endpoint added before that rule keeps delivering).
    static func check(_ url: String, allowsPrivateNetworks: Bool, resolving: Bool, adding: Bool) throws(WebhookError) {
        // Only what RFC 3986 lets a URL hold raw: a `<` or `"` would be markup wherever the URL is shown.
        guard url.unicodeScalars.allSatisfy({ $0.isASCII && (Self.uriCharacters.contains($0) || $0.properties.isAlphabetic
                                                             || ("0"..."9").contains($0)) })
        else { throw .invalidURL("it holds a character a URL does not allow as is (a space, < > \" { } | \\ ^ `): percent-encode it") }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            throw .invalidURL("it cannot be parsed as a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidURL("the scheme '\(scheme)' is not http or https")
        }
        guard let host = components.host, !host.isEmpty else { throw .invalidURL("it names no host") }
        if adding { try refuseCredentials(in: components) }
        guard !allowsPrivateNetworks else { return }

        let addresses = IPAddress(host).map { [$0] } ?? (resolving ? IPAddress.resolve(host) : [])
        if let refused = addresses.first(where: { $0.nonPublicRange != nil }), let range = refused.nonPublicRange {
            let shown = IPAddress(host) == nil ? "\(host) resolves to \(refused), which" : "\(refused)"
            throw .refusedURL("\(shown) is not a public internet address (\(range))")
        }
        guard scheme == "https" else {
            throw .refusedURL("plain http is not encrypted, so anyone on the way could read and change the events")
        }
    }

    /// The URL is stored and shown as it is, unlike the signing secret, which is sealed: no
    /// credentials in it, in the user info or in a query parameter named like one.
    private static func refuseCredentials(in components: URLComponents) throws(WebhookError) {
        guard components.user == nil, components.password == nil else {
            throw .invalidURL("it holds a user name or password: the receiver checks the signature header (docs/webhooks.md) instead")
        }
        if let secret = components.queryItems?.first(where: { Redact.isQuerySecret($0.name) }) {
            throw .invalidURL("its query parameter '\(secret.name)' looks like a credential: the receiver checks the signature "
                              + "header (docs/webhooks.md) instead")
        }
    }
}
