import Foundation
import PropertyBased
import Redaction
import Testing

/// Whatever the password and wherever it stands, the redacted string never holds it (raw or
/// percent-encoded), and it is the same string as written with `***` in the password's place: the
/// host, port, database, user and other parameters are kept.
@Suite struct RedactPropertyTests {
    /// Pieces of passwords: the characters URLs and conninfo strings treat specially, percent
    /// signs and encodings, spaces libpq splits on and one it does not, unicode, and plain text.
    static let pieces = [
        " ", "'", "\\", "\\'", "@", ":", "/", "?", "&", "=", "#", "%", "%41", "%2F", "+", "\t", "\n", "\u{A0}",
        "é", "e\u{301}", "ß", "密码", "🔑", "''", "=''", "a", "Z", "9", "pw", "s3cret", ".", "-", "_",
    ]
    /// Characters that no host, user or other parameter around a password uses (they are plain
    /// letters, digits, `.`, `-`, `_`, `=` and spaces): with one of them, the password cannot
    /// show up in the output by chance.
    static let markers = ["'", "\\", "é", "ß", "密码", "🔑", "\u{A0}"]

    /// 1 to 11 pieces, one of them a marker.
    static let password = zip(
        oneOf(pieces).array(of: 0...10),
        oneOf(markers),
        Gen.int(in: 0...10)
    ).map { pieces, marker, at in
        var pieces = pieces
        pieces.insert(marker, at: min(at, pieces.count))
        return pieces.joined()
    }

    static let word = Gen.letterOrNumber.string(of: 1...8)
    static let host = zip(word, oneOf(["", ".internal", "-1.db.example"])).map { $0 + $1 }
    static let parameter = zip(oneOf(["sslmode", "db", "application_name", "connect_timeout", "user"]), word)
        .map { "\($0)=\($1)" }
    /// The secret parameter's name as written: libpq's spellings, any case, or percent-encoded in a URL.
    static let secretName = oneOf(["password", "sslpassword", "PASSWORD", "Password", "pass%77ord", "%70assword"])

    /// Query parameters as a URL prints them: every value masked, whatever its name.
    static func masked(_ parameters: [String]) -> [String] {
        parameters.map { $0.contains("=") ? "\($0.prefix { $0 != "=" })=***" : $0 }
    }

    /// Where the password goes in a URL: in the user info, among the query parameters, or both.
    enum URLPlace: CaseIterable { case userInfo, query, both }

    @Test func urlsNeverShowThePassword() async {
        let shape = zip(
            Self.oneOf(["postgresql", "postgres", "redis", "rediss", "unix"]),
            zip(Self.oneOf(["", "app", "fleet-worker"]), Self.host, Gen.int(in: 0...65_535).array(of: 0...1)),
            zip(Self.oneOf(["", "/", "/0", "/receiptfleet"]), Self.parameter.array(of: 0...4)),
            zip(Gen<URLPlace>.case, Gen.int(in: 0...4), Self.secretName)
        )
        await propertyCheck(count: 400, input: Self.password, shape) { password, shape in
            let (scheme, (user, host, port), (path, parameters), (place, index, name)) = shape
            let encoded = Self.percentEncoded(password)
            func url(_ secret: String, _ parameters: [String]) -> String {
                let userInfo = place == .query ? (user.isEmpty ? "" : "\(user)@") : "\(user):\(secret)@"
                var query = parameters
                if place != .userInfo { query.insert("\(name)=\(secret)", at: min(index, query.count)) }
                let authority = "\(userInfo)\(host)" + (port.first.map { ":\($0)" } ?? "")
                return "\(scheme)://\(authority)\(path)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
            }
            let shown = Redact.connectionString(url(encoded, parameters))
            #expect(shown == url("***", Self.masked(parameters)))
            #expect(!shown.contains(password) && !shown.contains(encoded))
        }
    }

    /// A password written raw in the user info, as libpq accepts it (psql connects with it): any
    /// character but `@`, `/` and `%`, and always the `?` and `#` that would start a query or a fragment.
    static let rawPassword = zip(password, Gen.int(in: 0...10)).map { password, at in
        var raw = password.filter { !"@/%".contains($0) }
        raw.insert(contentsOf: "?x=1", at: raw.index(raw.startIndex, offsetBy: min(at, raw.count)))
        return raw + "#top"
    }

    @Test func rawPasswordsInTheUserInfoAreMaskedWhole() async {
        let shape = zip(
            Self.oneOf(["postgresql", "postgres", "redis", "rediss"]),
            zip(Self.oneOf(["", "app", "fleet-worker"]), Self.host, Gen.int(in: 0...65_535).array(of: 0...1)),
            zip(Self.oneOf(["", "/", "/0", "/receiptfleet"]), Self.parameter.array(of: 0...4))
        )
        await propertyCheck(count: 400, input: Self.rawPassword, shape) { password, shape in
            let (scheme, (user, host, port), (path, parameters)) = shape
            func url(_ secret: String, _ parameters: [String]) -> String {
                "\(scheme)://\(user):\(secret)@\(host)" + (port.first.map { ":\($0)" } ?? "") + path
                    + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
            }
            let shown = Redact.connectionString(url(password, parameters))
            #expect(shown == url("***", Self.masked(parameters)))
            #expect(!shown.contains(password))
        }
    }

    /// The URLs that allow a query (Apple's, the Server API's, webhooks') keep their secrets under
    /// any name a receiver chooses: every value is masked.
    @Test func querySecretsUnderAnyNameAreMasked() async {
        let name = Self.oneOf([
            "token", "secret", "key", "api_key", "apiKey", "access_token", "client_secret", "X-Amz-Signature", "sig", "auth",
            "Password", "tok%65n",
        ])
        let shape = zip(
            zip(Self.oneOf(["https", "http"]), Self.host, Self.oneOf(["", "/", "/hooks/receiptfleet", "/verifyReceipt"])),
            zip(Self.parameter.array(of: 0...4), Gen.int(in: 0...4), name)
        )
        await propertyCheck(count: 400, input: Self.password, shape) { password, shape in
            let ((scheme, host, path), (parameters, index, name)) = shape
            let encoded = Self.percentEncoded(password)
            func url(_ secret: String, _ parameters: [String]) -> String {
                var query = parameters
                query.insert("\(name)=\(secret)", at: min(index, query.count))
                return "\(scheme)://\(host)\(path)?" + query.joined(separator: "&")
            }
            let shown = Redact.url(url(encoded, parameters))
            #expect(shown == url("***", Self.masked(parameters)))
            #expect(!shown.contains(password) && !shown.contains(encoded))
        }
    }

    /// How a conninfo value is written: in quotes, or bare with backslashes before what needs them.
    enum Quoting: CaseIterable { case quoted, escaped }

    @Test func conninfoStringsNeverShowThePassword() async {
        let keyValue = Self.oneOf(["host", "port", "dbname", "user", "sslmode", "application_name"])
        let shape = zip(
            zip(keyValue, Self.word).map { "\($0)=\($1)" }.array(of: 0...5),
            zip(Gen.int(in: 0...5), Self.oneOf(["password", "sslpassword", "PASSWORD", "PassWord"])),
            zip(Gen<Quoting>.case, Self.oneOf(["=", " = ", "\t=  ", "= "])),
            Self.oneOf([" ", "  ", "\t", "\n", " \r\n"])
        )
        await propertyCheck(count: 400, input: Self.password, shape) { password, shape in
            let (others, (index, keyword), (quoting, equals), separator) = shape
            let written = Self.conninfoValue(password, quoting)
            func conninfo(_ secret: String) -> String {
                var parameters = others
                parameters.insert("\(keyword)\(equals)\(secret)", at: min(index, parameters.count))
                return parameters.joined(separator: separator)
            }
            let shown = Redact.connectionString(conninfo(written))
            #expect(shown == conninfo("***"))
            #expect(!shown.contains(password) && !shown.contains(written))
        }
    }

    static func oneOf(_ choices: [String]) -> Generator<String, Shrink.None<String?>> {
        Gen<String?>.element(of: choices).map { $0! }
    }

    /// Every byte but the unreserved ones percent-encoded, as a URL needs for a password.
    static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"))!
    }

    /// A conninfo value that libpq reads back as `text`.
    static func conninfoValue(_ text: String, _ quoting: Quoting) -> String {
        switch quoting {
        case .quoted:
            return "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        case .escaped:
            return String(text.unicodeScalars.flatMap { scalar -> [Unicode.Scalar] in
                " \t\n\u{0B}\u{0C}\r'\\".unicodeScalars.contains(scalar) ? ["\\", scalar] : [scalar]
            }.map(Character.init))
        }
    }
}
