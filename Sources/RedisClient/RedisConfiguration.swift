import Redaction

/// Where a Redis server is and how to talk to it.
///
/// `description` never shows the password, so a configuration may be logged as is.
public struct RedisConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// How to reach the server.
    public enum Endpoint: Sendable, Hashable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        case unixSocket(path: String)

        /// `host:port` (IPv6 hosts in brackets) or `unix:<path>`: the form used in error messages.
        public var description: String {
            switch self {
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .unixSocket(let path): "unix:\(path)"
            }
        }
    }

    public var endpoint: Endpoint
    /// The ACL user for `AUTH user password`; nil authenticates as the default user (`AUTH password`).
    public var username: String?
    /// Nil sends no AUTH at all.
    public var password: String?
    /// Selected with SELECT right after connecting (and after every reconnect).
    public var database: Int
    /// How long to wait for the connection to be established.
    public var connectTimeout: Duration
    /// How long to wait for each read or write on an established connection; a server that does not
    /// answer (stopped, or its host frozen) ends the command in `RedisError.timeout`. A blocking
    /// command (BLPOP, XREADGROUP … BLOCK) is given its block time on top (`command(_:blockingFor:)`).
    public var commandTimeout: Duration

    public init(
        endpoint: Endpoint,
        username: String? = nil,
        password: String? = nil,
        database: Int = 0,
        connectTimeout: Duration = .seconds(5),
        commandTimeout: Duration = .seconds(10)
    ) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    /// A URL for this configuration with the password replaced by `***`.
    public var description: String {
        let maskedPassword = password == nil ? nil : Redact.mask
        switch endpoint {
        case .tcp:
            let credentials = [username, maskedPassword.map { ":\($0)" }].compactMap(\.self).joined()
            let userInfo = credentials.isEmpty ? "" : "\(credentials)@"
            return "redis://\(userInfo)\(endpoint)/\(database)"
        case .unixSocket(let path):
            let query = [
                "db=\(database)",
                username.map { "user=\($0)" },
                maskedPassword.map { "password=\($0)" },
            ].compactMap(\.self).joined(separator: "&")
            return "unix://\(path)?\(query)"
        }
    }

    /// Checks what hiredis cannot check for us, before any connection attempt.
    func validate() throws(RedisError) {
        if case .tcp(let host, let port) = endpoint {
            guard !host.isEmpty else { throw .invalidConfiguration("the host name is empty") }
            guard (1...65_535).contains(port) else {
                throw .invalidConfiguration("port \(port) is outside 1...65535")
            }
        }
        if case .unixSocket(let path) = endpoint, path.isEmpty {
            throw .invalidConfiguration("the unix socket path is empty")
        }
        guard database >= 0 else { throw .invalidConfiguration("database \(database) is negative") }
        guard connectTimeout > .zero, commandTimeout > .zero else {
            throw .invalidConfiguration("timeouts must be positive")
        }
        if username != nil, password == nil {
            throw .invalidConfiguration("a user name needs a password (AUTH user password)")
        }
    }
}
