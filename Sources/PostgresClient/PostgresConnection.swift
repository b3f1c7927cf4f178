import CLibpq
import Foundation
import Redaction

/// One PostgreSQL session. Every call blocks the calling thread until the server answers, so use a
/// connection from one thread of its own (for async code, `PostgresPool` provides those threads).
/// It is not `Sendable`: the compiler keeps it on that thread.
///
/// SQL and values travel separately (`$1`, `$2`… and `PostgresValue`); there is no way to splice a
/// value into the SQL text.
///
/// When the server drops the session (restart, `pg_terminate_backend`, network loss), the call that
/// notices throws `connectionLost` and is not retried, since it may have taken effect; the next call
/// reconnects, listens again on the channels passed to `listen`, and runs as usual.
public final class PostgresConnection {
    public let configuration: PostgresConfiguration
    /// The libpq connection (`PGconn *`); `PQreset` reconnects it in place, `deinit` frees it.
    let handle: OpaquePointer
    /// Channels to LISTEN on again after a reconnect.
    var listenedChannels: [String] = []

    /// Opens a session, or throws `connectionFailed` with the server's reason.
    public init(configuration: PostgresConfiguration) throws {
        self.configuration = configuration
        let parameters = configuration.parameters
        let keywords = parameters.map { strdup($0.keyword) }
        let values = parameters.map { strdup($0.value) }
        defer { (keywords + values).forEach { free($0) } }
        // Both lists end with NULL; `expand_dbname` is 0 so no value is read as a connection string.
        guard let handle = PQconnectdbParams(
            keywords.map { UnsafePointer($0) } + [nil], values.map { UnsafePointer($0) } + [nil], 0)
        else { throw PostgresError(kind: .connectionFailed, message: "libpq could not allocate a connection") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let error = PostgresError(kind: .connectionFailed, message: Self.message(of: handle, hiding: configuration))
            PQfinish(handle)
            throw error
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    /// The server process serving this session; it changes when the connection reconnects.
    public var backendPID: Int32 { PQbackendPID(handle) }

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
        try reconnectIfLost()
        let result = sql.withUTF8Buffer { text in
            String(decoding: text, as: UTF8.self).withCString { PQexec(handle, $0) }
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
        default: throw failure(from: result)
        }
    }

    /// Sends one statement with its parameters and waits for the result.
    func run(_ sql: String, _ parameters: [PostgresValue]) throws -> PostgresResult {
        try reconnectIfLost()
        let encoded = try EncodedParameters(parameters)
        let result = encoded.bytes.withUnsafeBufferPointer { buffer in
            let values = encoded.offsets.map { offset in
                offset.map { UnsafeRawPointer(buffer.baseAddress! + $0).assumingMemoryBound(to: CChar.self) }
            }
            return PQexecParams(
                handle, sql, Int32(parameters.count), encoded.types, values, encoded.lengths, encoded.formats,
                0)  // results in text format: every type has one, and the readers parse it
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(result!)
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            PQclear(result)  // libpq leaves the COPY state by itself before the next statement
            throw PostgresError(
                kind: .misuse,
                message: "COPY is not supported; insert many rows with INSERT … SELECT … FROM jsonb_to_recordset($1)")
        default:
            defer { PQclear(result) }
            throw failure(from: result)
        }
    }

    /// Reconnects a session the server dropped, and listens again on its channels.
    func reconnectIfLost() throws {
        guard PQstatus(handle) == CONNECTION_BAD else { return }
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(kind: .connectionFailed, message: Self.message(of: handle, hiding: configuration))
        }
        for channel in listenedChannels { try execute("LISTEN \(try quotedIdentifier(channel))") }
    }

    /// The error a failed statement reports: `connectionLost` if the session is gone, else the server's.
    func failure(from result: OpaquePointer?) -> PostgresError {
        // libpq's PG_DIAG_* codes are character macros, which Swift does not import: these are their values.
        func field(_ code: Unicode.Scalar) -> String? {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
        }
        let sqlState = field("C")  // PG_DIAG_SQLSTATE
        let message = field("M")  // PG_DIAG_MESSAGE_PRIMARY
            ?? Self.message(of: handle, hiding: configuration)  // libpq's own errors have no fields
        if PQstatus(handle) == CONNECTION_BAD {
            return PostgresError(kind: .connectionLost, message: message, sqlState: sqlState)
        }
        return PostgresError(kind: .server, message: message, sqlState: sqlState, detail: field("D"))  // ..._DETAIL
    }

    /// libpq's last error message on one line, with the password scrubbed should it ever appear.
    static func message(of handle: OpaquePointer, hiding configuration: PostgresConfiguration) -> String {
        let message = String(cString: PQerrorMessage(handle)).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        if message.isEmpty { return "no reason given" }
        return configuration.password.map { Redact.text(message, hiding: $0) } ?? message
    }

    /// `name` quoted as an SQL identifier by libpq (for LISTEN, which takes no parameters).
    func quotedIdentifier(_ name: String) throws -> String {
        guard let quoted = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PostgresError(kind: .misuse, message: Self.message(of: handle, hiding: configuration))
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
