import CLibpq
import Foundation
import Redaction

/// Where and how to connect: a PostgreSQL URL or a libpq key=value string, read by libpq itself so
/// every parameter it knows (`sslmode`, `sslrootcert`, `target_session_attrs`…) passes through untouched.
///
///     let config = try PostgresConfiguration("postgresql://app:secret@db:5432/app?sslmode=require")
///     let config = try PostgresConfiguration("host=db dbname=app user=app sslmode=verify-full")
///
/// Every session is opened with `TimeZone=UTC` and `DateStyle=ISO` (and the output formats the row
/// decoders rely on), whatever the server's defaults. `description` masks the password (`Redact.conninfo`).
public struct PostgresConfiguration: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// How long to wait for a session to open. libpq counts whole seconds, and waits at least 2.
    public var connectTimeout: Duration
    /// How long each call (a statement, a script, a LISTEN) may wait for the server before it throws
    /// `timeout` and the session is dropped. Counted by the client, so it holds when the server is
    /// stopped, unlike the server's own `statement_timeout`.
    public var callTimeout: Duration = .seconds(10)
    /// Shown in `pg_stat_activity` and the server's logs.
    public var applicationName: String

    /// The parameters given in the string, in libpq's order.
    private var given: [Parameter]

    /// Reads a `postgresql://` / `postgres://` URL or a `key=value …` connection string.
    /// `connect_timeout` and `application_name`, when given, fill the properties of the same name.
    public init(_ connectionString: String) throws {
        given = try Parameter.parse(connectionString)
        let timeout = given.first { $0.keyword == "connect_timeout" }.flatMap { Int($0.value) }
        connectTimeout = .seconds(timeout ?? 10)
        applicationName = given.first { $0.keyword == "application_name" }?.value
            ?? ProcessInfo.processInfo.processName
        given.removeAll { $0.keyword == "connect_timeout" || $0.keyword == "application_name" }
    }

    /// Checks what libpq does not, before any connection attempt.
    func validate() throws {
        guard callTimeout > .zero else {
            throw PostgresError(kind: .invalidConfiguration, message: "the call timeout must be positive")
        }
    }

    /// The same server and credentials, another database.
    public func database(_ name: String) -> PostgresConfiguration {
        var other = self
        other.given.removeAll { $0.keyword == "dbname" }
        other.given.append(Parameter(keyword: "dbname", value: name))
        return other
    }

    /// The given parameters as one key=value string, secrets included: for handing the
    /// configuration to a child process, never for showing.
    public var unmaskedConnectionString: String { Self.rendered(given) }

    /// The parameters libpq connects with: the given ones, the properties, and the session settings.
    var parameters: [(keyword: String, value: String)] {
        // Decoders read timestamps as ISO in UTC, bytea as hex and floats at full precision, so the
        // session pins those settings; they follow the caller's own `options`, so they win.
        let session = "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex -c extra_float_digits=3 -c client_min_messages=warning"
        let options = given.first { $0.keyword == "options" }.map { "\($0.value) \(session)" } ?? session
        // Rounded up, and never 0, which libpq reads as "wait forever".
        let seconds = max(1, connectTimeout.components.seconds + (connectTimeout.components.attoseconds > 0 ? 1 : 0))
        return given.filter { $0.keyword != "options" }.map { ($0.keyword, $0.value) } + [
            ("connect_timeout", String(seconds)),
            ("application_name", applicationName),
            ("options", options),
        ]
    }

    /// The password, to scrub it from libpq's messages should one ever quote it.
    var password: String? { given.first { $0.keyword == "password" }?.value }

    /// The connection string with every secret (password, sslpassword) replaced by `***`; the
    /// session settings this client adds to `options` are left out.
    public var description: String {
        Redact.conninfo(Self.rendered(given + [
            Parameter(keyword: "connect_timeout", value: "\(connectTimeout.components.seconds)"),
            Parameter(keyword: "application_name", value: applicationName),
        ]))
    }

    public var debugDescription: String { description }

    /// `dump` and `print(reflecting:)` read the mirror; it shows only the masked description.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }

    /// `parameters` as one libpq key=value string.
    private static func rendered(_ parameters: [Parameter]) -> String {
        parameters.map { "\($0.keyword)=\(quoted($0.value))" }.joined(separator: " ")
    }

    /// Quotes a value the way libpq's key=value syntax expects, when it needs quoting: when empty,
    /// or holding a quote, a backslash or any space libpq splits on (tabs and newlines too).
    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.unicodeScalars.contains(where: { " \t\n\u{0B}\u{0C}\r'\\".unicodeScalars.contains($0) })
        else { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
        return "'\(escaped)'"
    }
}

/// One `keyword=value` pair of a connection string.
private struct Parameter: Sendable {
    var keyword: String
    var value: String

    /// Lets libpq parse the string, so URL and key=value forms behave exactly as in `psql`.
    static func parse(_ connectionString: String) throws -> [Parameter] {
        var libpqMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &libpqMessage) else {
            PQfreemem(libpqMessage)  // it may quote the string, password included, so it is not shown
            throw PostgresError(
                kind: .invalidConfiguration,
                message: "the connection string or URL could not be parsed (not shown: it may hold a password); "
                    + "use postgresql://user:password@host:port/database?key=value or key=value pairs")
        }
        defer { PQconninfoFree(options) }
        var parameters: [Parameter] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                parameters.append(Parameter(keyword: String(cString: keyword), value: String(cString: value)))
            }
            option += 1
        }
        return parameters
    }
}
