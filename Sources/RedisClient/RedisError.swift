/// Everything that can go wrong talking to Redis. No case ever carries a password.
public enum RedisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Redis answered the command with an error reply; the payload is Redis's own message,
    /// e.g. "WRONGTYPE Operation against a key holding the wrong kind of value".
    /// The connection is still good.
    case server(String)

    /// No connection could be made to `endpoint`: refused, unreachable, unknown host, connect
    /// timeout, or the server refused the requested database.
    case connectFailed(endpoint: String, reason: String)

    /// The server at `endpoint` rejected the credentials (WRONGPASS, NOAUTH, "invalid password");
    /// `message` is the server's own reply.
    case authenticationFailed(endpoint: String, message: String)

    /// An established connection broke (I/O error or the server closed it). The command that met
    /// the break may or may not have run; it is not retried. The next command reconnects.
    case connectionLost(endpoint: String, reason: String)

    /// No reply arrived within the command timeout. The connection was dropped, since a late reply
    /// would otherwise be read as the answer to the next command. The command may or may not have
    /// run; it is not retried. The next command reconnects.
    case timeout(endpoint: String, after: Duration)

    /// The configuration (or the URL it came from) is unusable; the text says what is wrong.
    case invalidConfiguration(String)

    /// Whether Redis could not be reached or did not answer in time (not a refusal or a reply).
    public var meansRedisIsNotAnswering: Bool {
        switch self {
        case .timeout, .connectFailed, .connectionLost: true
        case .server, .authenticationFailed, .invalidConfiguration: false
        }
    }

    public var description: String {
        switch self {
        case .server(let message):
            "Redis replied with an error: \(message)"
        case .connectFailed(let endpoint, let reason):
            "Could not connect to Redis at \(endpoint): \(reason). "
                + "Check that the server is running and reachable and that the address and database are right."
        case .authenticationFailed(let endpoint, let message):
            "Redis at \(endpoint) rejected the credentials: \(message). "
                + "Check the configured user name and password."
        case .connectionLost(let endpoint, let reason):
            "Lost the connection to Redis at \(endpoint): \(reason). "
                + "The command may or may not have run; the next command reconnects."
        case .timeout(let endpoint, let after):
            "Redis at \(endpoint) did not reply within \(after). The connection was dropped; "
                + "the command may or may not have run; the next command reconnects. Raise the command timeout "
                + "if the command legitimately takes this long (blocking commands declare their wait: blockingFor)."
        case .invalidConfiguration(let reason):
            "Invalid Redis configuration: \(reason)"
        }
    }
}
