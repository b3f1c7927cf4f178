import Foundation

extension Redact {
    /// A URL with the password of its user info (`scheme://user:password@host…`) and the value of
    /// every query parameter replaced by `***`: the one masking rule for every URL the product
    /// prints. Receivers and proxies take credentials under names no list can hold (`?code=`,
    /// `?jwt=`, `?session=`), and where a URL points is in its host and path.
    ///
    /// Written for URLs people type, not only valid ones, and for every form a client accepts:
    /// the user info ends at the last `@` before the query (so a password with a raw `@`, `:` or
    /// `/` is masked whole) or, as libpq reads a URL, at the first `@` before any `/` (so a raw `?`
    /// or `#` is too), whichever is further; only user info with a `:` holds a password.
    public static func url(_ url: String) -> String {
        let scalars = url.unicodeScalars
        let authorityStart = url.range(of: "://")?.upperBound ?? scalars.startIndex
        let rest = scalars[authorityStart...]
        let firstQuery = rest.firstIndex { $0 == "?" || $0 == "#" } ?? scalars.endIndex
        let lastBeforeQuery = rest[..<firstQuery].lastIndex(of: "@")
        let firstBeforePath = rest.firstIndex(of: "@").flatMap { at in rest[..<at].contains("/") ? nil : at }
        let userInfoEnd = [lastBeforeQuery, firstBeforePath].compactMap { $0 }
            .filter { at in rest[..<at].contains(":") }.max()
        guard let at = userInfoEnd, let colon = rest[..<at].firstIndex(of: ":") else {
            return String(scalars[..<firstQuery]) + query(String(scalars[firstQuery...]))
        }
        let queryStart = scalars[at...].firstIndex { $0 == "?" || $0 == "#" } ?? scalars.endIndex
        return String(scalars[...colon]) + mask + String(scalars[at..<queryStart]) + query(String(scalars[queryStart...]))
    }

    /// A URL where it is shown to people who need only where it points (the console, the audit
    /// trail): its password masked and its query left out as `?…` (receivers often take a token there).
    public static func urlWithoutQuery(_ url: String) -> String {
        let base = String(url.prefix { $0 != "?" && $0 != "#" })
        return Self.url(base) + (base.count < url.count ? "?…" : "")
    }

    /// `?a=1&password=…#fragment` with every parameter's value masked (a name alone stays); the
    /// fragment as is.
    private static func query(_ rest: String) -> String {
        guard rest.hasPrefix("?") else { return rest }
        let fragmentStart = rest.firstIndex(of: "#") ?? rest.endIndex
        let parameters = rest[rest.index(after: rest.startIndex)..<fragmentStart].split(separator: "&", omittingEmptySubsequences: false)
        let masked = parameters.map { parameter in
            parameter.contains("=") ? "\(parameter.prefix { $0 != "=" })=\(mask)" : String(parameter)
        }
        return "?" + masked.joined(separator: "&") + rest[fragmentStart...]
    }

    /// Words that name a secret in a query parameter (`?token=`, `?api_key=`, `?X-Amz-Signature=`,
    /// `?sslpassword=`), matched anywhere in the name, in any case: a webhook URL that carries one
    /// is refused (`WebhookDestination`), since a credential belongs in the signature instead.
    static let querySecretWords = ["pass", "pwd", "secret", "token", "key", "auth", "sig", "credential"]

    public static func isQuerySecret(_ name: some StringProtocol) -> Bool {
        let name = name.lowercased()
        return querySecretWords.contains { name.contains($0) }
    }
}
