/// Everything that can go wrong talking to PostgreSQL, with the server's own words where it gave any.
///
/// `description` never contains a password, and leaves out the server's `detail`, which often quotes
/// row values (`Key (receipt)=(…) already exists.`): read `detail` only where those values are safe.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The connection string or URL could not be read.
        case invalidConfiguration
        /// No session could be opened: server down, wrong password, unknown database…
        case connectionFailed
        /// The server went away during a call. The statement may or may not have taken effect and is
        /// not retried; the next call on the connection reconnects.
        case connectionLost
        /// The server did not answer within the call timeout (`message` names the server and the
        /// timeout). The session was dropped and a cancel requested, but the statement may still take
        /// effect; it is not retried, and the next call reconnects.
        case timeout
        /// The server rejected the statement (see `sqlState`).
        case server
        /// A column is missing, has another type, or holds a value the requested type cannot represent.
        case decoding
        /// The client was used in a way it does not support (nested transactions, COPY…).
        case misuse
    }

    public let kind: Kind
    /// The SQLSTATE code (`23505`…) when the server sent one.
    public let sqlState: String?
    /// What went wrong: the server's primary message, or the client's own explanation.
    public let message: String
    /// The server's optional detail; may quote row values, so it is kept out of `description`.
    public let detail: String?

    init(kind: Kind, message: String, sqlState: String? = nil, detail: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
    }

    /// 23505: an insert or update hit a unique index.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// 23503: a referenced row is missing, or a referencing row still exists.
    public var isForeignKeyViolation: Bool { sqlState == "23503" }
    /// 40001: a serializable or repeatable-read transaction lost a race; run the transaction again.
    public var isSerializationFailure: Bool { sqlState == "40001" }
    /// 40P01: the transaction was chosen as a deadlock victim; run the transaction again.
    public var isDeadlock: Bool { sqlState == "40P01" }

    public var description: String {
        let code = sqlState.map { " \($0)" } ?? ""
        switch kind {
        case .invalidConfiguration: return "invalid PostgreSQL configuration: \(message)"
        case .connectionFailed: return "could not connect to PostgreSQL\(code): \(message)"
        case .connectionLost:
            return "lost the connection to PostgreSQL\(code): \(message); the statement may or may not "
                + "have taken effect and was not retried; the next call reconnects"
        case .timeout:
            return "\(message); the connection was dropped and a cancel requested, but the statement may "
                + "still take effect and was not retried; the next call reconnects"
        case .server: return "PostgreSQL error\(code): \(message)"
        case .decoding: return "cannot decode PostgreSQL result: \(message)"
        case .misuse: return "PostgreSQL client misuse: \(message)"
        }
    }

    /// The same as `description`, so `print(reflecting:)` does not show the detail either.
    public var debugDescription: String { description }
}
