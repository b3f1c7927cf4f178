import Foundation

extension Redact {
    /// A URL with the password of its user info (`scheme://user:password@host…`) and every secret
    /// query parameter (`?password=…`, the name percent-encoded or not) replaced by `***`.
    ///
    /// Written for URLs people type, not only valid ones: the user info ends at the last `@` before
    /// the query, so a password with a raw `@`, `:` or `/` is masked whole.
    public static func url(_ url: String) -> String {
        let scalars = url.unicodeScalars
        let authorityStart = url.range(of: "://")?.upperBound ?? scalars.startIndex
        let queryStart = scalars[authorityStart...].firstIndex { $0 == "?" || $0 == "#" } ?? scalars.endIndex
        var head = String(scalars[..<queryStart])
        if let at = scalars[authorityStart..<queryStart].lastIndex(of: "@"),
            let colon = scalars[authorityStart..<at].firstIndex(of: ":")
        {
            head = String(scalars[...colon]) + mask + String(scalars[at..<queryStart])
        }
        return head + query(String(scalars[queryStart...]))
    }

    /// A URL where it is shown to people who need only where it points (the console, the audit
    /// trail): its password masked and its query left out as `?…` (receivers often take a token there).
    public static func urlWithoutQuery(_ url: String) -> String {
        let base = String(url.prefix { $0 != "?" && $0 != "#" })
        return Self.url(base) + (base.count < url.count ? "?…" : "")
    }

    /// `?a=1&password=…#fragment` with the secret parameters' values masked; the fragment as is.
    private static func query(_ rest: String) -> String {
        guard rest.hasPrefix("?") else { return rest }
        let fragmentStart = rest.firstIndex(of: "#") ?? rest.endIndex
        let parameters = rest[rest.index(after: rest.startIndex)..<fragmentStart].split(separator: "&", omittingEmptySubsequences: false)
        let masked = parameters.map { parameter in
            let name = parameter.prefix { $0 != "=" }
            return isSecret(name.removingPercentEncoding ?? String(name)) ? "\(name)=\(mask)" : String(parameter)
        }
        return "?" + masked.joined(separator: "&") + rest[fragmentStart...]
    }
}
