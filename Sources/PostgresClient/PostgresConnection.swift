import CLibpq
import Foundation
import Redaction

/// One PostgreSQL session. Every call blocks the calling thread until the server answers, so use a
/// connection from one thread of its own (for async code, a `Lane` of the `Lanes` target).
/// It is not `Sendable`: the compiler keeps it on that thread.
///
/// SQL and values travel separately (`$1`, `$2`… and `PostgresValue`); there is no way to splice a
/// value into the SQL text.
///
/// When the server drops the session (restart, `pg_terminate_backend`, network loss), the call that
/// notices throws `connectionLost` and is not retried, since it may have taken effect; the next call
/// reconnects, listens again on the channels passed to `listen`, and runs as usual. A call the server
/// does not answer within `configuration.callTimeout` throws `timeout` the same way (see `exchange`).
public final class PostgresConnection {
    public let configuration: PostgresConfiguration
    /// The libpq connection (`PGconn *`), in non-blocking mode; nil after a call timed out, until the
    /// next call connects again. `deinit` frees it.
    var session: OpaquePointer?
    /// Channels to LISTEN on again after a reconnect.
    var listenedChannels: [String] = []
    /// The statements prepared on the current session (see `PreparedStatement`); reset with the session.
    var preparedStatements = PreparedStatements.unchecked

    /// Opens a session, or throws `connectionFailed` with the server's reason.
    public init(configuration: PostgresConfiguration) throws {
        try configuration.validate()
        self.configuration = configuration
        session = try Self.open(configuration)
    }

    deinit {
        if let session { PQfinish(session) }
    }

    /// The server process serving this session (0 while there is none); it changes when the
    /// connection reconnects.
    public var backendPID: Int32 { session.map(PQbackendPID) ?? 0 }

    /// Runs one statement and returns its rows (none for statements that return none).
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> [PostgresRow] {
        try run(sql, parameters).rows()
    }

    /// Runs one statement and returns the number of rows it inserted, updated, deleted or selected.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws -> Int {
        try run(sql, parameters).rowsAffected
    }

    /// Runs a script of several statements, such as a schema migration. It takes no parameters, and
    /// its text must be a literal in the source (`StaticString`), so no value can be spliced into it.
    public func runScript(_ sql: StaticString) throws {
        let text = sql.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        _ = try exchange { PQsendQuery($0, text) }
    }

    /// Sends one statement with its parameters and waits for the result.
    func run(_ sql: String, _ parameters: [PostgresValue]) throws -> PostgresResult {
        let encoded = try EncodedParameters(parameters)
        return try exchange { session in
            encoded.withValues { values in
                PQsendQueryParams(
                    session, sql, Int32(parameters.count), encoded.types, values, encoded.lengths, encoded.formats,
                    0)  // results in text format: every type has one, and the readers parse it
            }
        }
    }

    /// The open session, connecting first when there is none or the server dropped it; a new session
    /// listens again on this connection's channels.
    func connectedSession() throws -> OpaquePointer {
        if let session, PQstatus(session) == CONNECTION_OK { return session }
        dropSession()
        let fresh = try Self.open(configuration)
        session = fresh
        for channel in listenedChannels { try execute("LISTEN \(try quotedIdentifier(channel))") }
        return fresh
    }

    /// Connects (within `connectTimeout`: libpq counts it over the whole handshake) and switches the
    /// session to non-blocking mode, so that no send can block past a call's deadline.
    private static func open(_ configuration: PostgresConfiguration) throws -> OpaquePointer {
        let parameters = configuration.parameters
        let keywords = parameters.map { strdup($0.keyword) }
        let values = parameters.map { strdup($0.value) }
        defer { (keywords + values).forEach { free($0) } }
        // Both lists end with NULL; `expand_dbname` is 0 so no value is read as a connection string.
        guard let session = PQconnectdbParams(
            keywords.map { UnsafePointer($0) } + [nil], values.map { UnsafePointer($0) } + [nil], 0)
        else { throw PostgresError(kind: .connectionFailed, message: "libpq could not allocate a connection") }
        guard PQstatus(session) == CONNECTION_OK, PQsetnonblocking(session, 1) == 0 else {
            let error = PostgresError(kind: .connectionFailed, message: message(of: session, hiding: configuration))
            PQfinish(session)
            throw error
        }
        // The server's notices ("relation already exists, skipping") would go to stderr. The session
        // asks for none (client_min_messages), but a pooler such as PgBouncer drops that setting.
        PQsetNoticeProcessor(session, { _, _ in }, nil)
        return session
    }

    /// The error a failed statement reports: `connectionLost` if the session is gone, else the server's.
    func failure(from result: OpaquePointer?, on session: OpaquePointer) -> PostgresError {
        // libpq's PG_DIAG_* codes are character macros, which Swift does not import: these are their values.
        func field(_ code: Unicode.Scalar) -> String? {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
        }
        let sqlState = field("C")  // PG_DIAG_SQLSTATE
        let message = field("M")  // PG_DIAG_MESSAGE_PRIMARY
            ?? Self.message(of: session, hiding: configuration)  // libpq's own errors have no fields
        if PQstatus(session) == CONNECTION_BAD {
            return PostgresError(kind: .connectionLost, message: message, sqlState: sqlState)
        }
        return PostgresError(kind: .server, message: message, sqlState: sqlState, detail: field("D"))  // ..._DETAIL
    }

    /// libpq's last error message on one line, with the password scrubbed should it ever appear.
    static func message(of session: OpaquePointer, hiding configuration: PostgresConfiguration) -> String {
        let message = String(cString: PQerrorMessage(session)).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        if message.isEmpty { return "no reason given" }
        return configuration.password.map { Redact.text(message, hiding: $0) } ?? message
    }

    /// `name` quoted as an SQL identifier by libpq (for LISTEN, which takes no parameters).
    func quotedIdentifier(_ name: String) throws -> String {
        let session = try connectedSession()
        guard let quoted = PQescapeIdentifier(session, name, name.utf8.count) else {
            throw PostgresError(kind: .misuse, message: Self.message(of: session, hiding: configuration))
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }
}

/// A successful `PGresult`, freed exactly once when it goes out of scope.
struct PostgresResult: ~Copyable {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }

    deinit { PQclear(result) }

    var rowsAffected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    func rows() -> [PostgresRow] {
        let columnRange = 0..<PQnfields(result)
        let columns = PostgresColumns(
            names: columnRange.map { String(cString: PQfname(result, $0)) },
            types: columnRange.map { PQftype(result, $0) })
        return (0..<PQntuples(result)).map { row in
            PostgresRow(columns: columns, values: columnRange.map { column in
                guard PQgetisnull(result, row, column) == 0 else { return nil }
                let bytes = UnsafeRawPointer(PQgetvalue(result, row, column)!).assumingMemoryBound(to: UInt8.self)
                let length = Int(PQgetlength(result, row, column))
                return String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
            })
        }
    }
}
