import Crypto
import Foundation

/// Secret tokens, each with a name for logs and rate limits: the API's bearer tokens and the ops
/// console's operator tokens (two settings, never shared). Tokens come from configuration (an
/// environment variable or a file), never from a flag; they print redacted, and only their names
/// are ever logged.
public struct NamedTokens: Sendable, CustomStringConvertible {
    private struct Entry: Sendable {
        let name: String
        let digest: [UInt8]
        let mark: String
        let scopes: Set<String>?
    }

    /// Who presented a token, and what it may do: nil scopes, everything (a token written without
    /// any). `mark` tells the token apart, for what must stay bound to it (a console session ends
    /// when its token is removed or rotated out): it is stored where a token must never be (Redis),
    /// so it is 8 bytes of a digest apart from the one tokens are compared by, nothing to log in with.
    public struct Grant: Sendable, Equatable {
        public let name: String
        public let scopes: Set<String>?
        public let mark: String

        public func allows(_ scope: String) -> Bool { scopes?.contains(scope) ?? true }
    }

    private let entries: [Entry]
    /// What they are, for messages: "API tokens", "console tokens".
    private let kind: String

    /// The shortest token accepted: shorter ones are guessable.
    public static let minimumLength = 16

    /// Reads `name:token` entries separated by commas or new lines, e.g.
    /// `backend:9f2c…,support:51ab…`. Names are letters, digits, `.`, `_` or `-`. A name given with
    /// two tokens is being rotated: both are accepted (the client moves to the new one, then the
    /// old entry goes); a third, or the same token twice, is refused. Where `scopes` are known, an
    /// entry may name what its token may do beside its name, `name(read+register):token`; one that
    /// names none may do everything.
    public init(parsing text: String, kind: String = "API tokens", scopes known: Set<String> = []) throws(NamedTokensError) {
        var entries: [Entry] = []
        let items = text.split(whereSeparator: { $0 == "," || $0.isNewline }).map { $0.trimmingCharacters(in: .whitespaces) }
        for (index, item) in items.enumerated() where !item.isEmpty {
            guard let colon = item.firstIndex(of: ":") else {
                throw NamedTokensError(kind, "entry \(index + 1) is not NAME:TOKEN")
            }
            var name = String(item[..<colon])
            let token = item[item.index(after: colon)...]
            var scopes: Set<String>?
            if let open = name.firstIndex(of: "("), name.hasSuffix(")") {
                let written = name[name.index(after: open)..<name.index(before: name.endIndex)].split(separator: "+").map(String.init)
                guard !known.isEmpty else { throw NamedTokensError(kind, "entry \(index + 1) names scopes; \(kind) take none") }
                guard !written.isEmpty, Set(written).isSubset(of: known) else {
                    throw NamedTokensError(kind, "entry \(index + 1) names scopes that are not among \(known.sorted().joined(separator: ", ")) "
                        + "(write NAME(read+register):TOKEN)")
                }
                (name, scopes) = (String(name[..<open]), Set(written))
            }
            guard !name.isEmpty, name.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
                throw NamedTokensError(kind, "entry \(index + 1) has a name that is not 1 to 64 letters, digits, '.', '_' or '-'")
            }
            guard token.count >= Self.minimumLength, !token.contains(where: \.isWhitespace) else {
                throw NamedTokensError(kind, "the token named '\(name)' is shorter than \(Self.minimumLength) characters or holds spaces; "
                    + "make one with `openssl rand -hex 32`")
            }
            let digest = Array(SHA256.hash(data: Array(token.utf8)))
            guard !entries.contains(where: { digestsEqual($0.digest, digest) }) else {
                throw NamedTokensError(kind, "a token is given twice (the second time as '\(name)'); give each client its own")
            }
            guard entries.count(where: { $0.name == name }) < 2 else {
                throw NamedTokensError(kind, "the name '\(name)' has more than two tokens; two are for a rotation, the old and the new")
            }
            entries.append(Entry(name: name, digest: digest, mark: Self.mark(of: token), scopes: scopes))
        }
        guard !entries.isEmpty else { throw NamedTokensError(kind, "no token is given") }
        self.entries = entries
        self.kind = kind
    }

    /// The name of the token `presented`, or nil.
    public func client(presenting presented: some StringProtocol) -> String? {
        grant(presenting: presented)?.name
    }

    /// Who presented `presented` and what it may do, or nil. Compares in constant time: every
    /// configured token is compared in full (as a SHA-256 digest, so lengths never differ), whatever matches.
    public func grant(presenting presented: some StringProtocol) -> Grant? {
        let digest = Array(SHA256.hash(data: Array(presented.utf8)))
        var match: Grant?
        for entry in entries where digestsEqual(digest, entry.digest) { match = Grant(name: entry.name, scopes: entry.scopes, mark: entry.mark) }
        return match
    }

    /// Whether `name` still has the token whose `Grant.mark` this is.
    public func holds(mark: String, for name: String) -> Bool {
        entries.contains { $0.name == name && digestsEqual(Array($0.mark.utf8), Array(mark.utf8)) }
    }

    private static func mark(of token: some StringProtocol) -> String {
        SHA256.hash(data: Array("receiptfleet token mark|\(token)".utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether a token of these is also one of `others`' (a token given to two doors).
    public func sharesAToken(with others: NamedTokens) -> Bool {
        entries.contains { entry in others.entries.contains { digestsEqual($0.digest, entry.digest) } }
    }

    /// Each name once, in the order given.
    public var names: [String] {
        var names: [String] = []
        for entry in entries where !names.contains(entry.name) { names.append(entry.name) }
        return names
    }

    /// The names with a token that names no scopes, and so may do everything, for `config check`.
    public var unscopedNames: [String] { names.filter { name in entries.contains { $0.name == name && $0.scopes == nil } } }

    /// The names with two tokens: rotations under way, for `config check`.
    public var rotating: [String] { names.filter { name in entries.count(where: { $0.name == name }) == 2 } }

    public var description: String { "<\(entries.count) \(kind) (\(names.joined(separator: ", "))), redacted>" }
}

public struct NamedTokensError: Error, Sendable, CustomStringConvertible {
    public let kind: String
    public let message: String
    init(_ kind: String, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { "\(kind): \(message)" }
}

/// Whether two SHA-256 digests are equal, in time that does not depend on where they differ.
/// Secrets are compared as digests, so their lengths do not show either.
public func digestsEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
}
