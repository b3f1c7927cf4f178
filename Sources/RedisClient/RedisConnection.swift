import CHiredis

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking connection to one Redis server, speaking RESP2 through hiredis.
///
/// Every call blocks the calling thread until Redis answers, so use it from a thread of its own
/// (a Lane), never from Swift's cooperative pool. It is not `Sendable`: create it on that thread
/// and keep it there.
///
/// When the connection breaks (I/O error, the server closed it, or `commandTimeout` expired), the
/// command that met the break throws `RedisError.connectionLost` or `.timeout` and is *not* retried,
/// since it may already have run and commands are not idempotent. The next command reconnects
/// first (authenticating and selecting the database again), or throws the connect error.
public final class RedisConnection {
    /// As given, except that a Redis Cluster's MOVED redirect repoints `endpoint` at the node
    /// that now serves the keys (see `RedisConnection+Redirects.swift`).
    public internal(set) var configuration: RedisConfiguration
    /// The endpoint configured, where a connection repointed by MOVED goes back to when the node
    /// it was sent to cannot be reached (a cluster node that died: the seed knows its successor).
    let seedEndpoint: RedisConfiguration.Endpoint
    /// Nil after a break, until the next command reconnects.
    private var context: UnsafeMutablePointer<redisContext>?
    /// SHA-1 of each script loaded through this connection, by source text (see `run`).
    var scriptHashes: [String: String] = [:]

    /// Connects, authenticates and selects the database, or throws `.connectFailed`,
    /// `.authenticationFailed` or `.invalidConfiguration`. With `connectingNow` false it only
    /// checks the configuration, and the first command connects: for a holder that must come up
    /// while Redis is down (the API's lanes, which serve PostgreSQL reads then too).
    public init(_ configuration: RedisConfiguration, connectingNow: Bool = true) throws(RedisError) {
        try configuration.validate()
        self.configuration = configuration
        seedEndpoint = configuration.endpoint
        _ = brokenPipeSignalIgnored
        if connectingNow { context = try connect() }
    }

    deinit {
        if let context { redisFree(context) }
    }

    /// Runs one command, e.g. `command("SET", key, value, "PX", 30_000)`, and returns its reply.
    /// An error reply throws `RedisError.server` with Redis's message.
    @discardableResult
    public func command(_ arguments: any RedisArgument...) throws(RedisError) -> RedisValue {
        try command(arguments)
    }

    /// Runs one command given as an array (for argument lists built at run time). A blocking
    /// command (BLPOP, XREADGROUP … BLOCK) says how long the server may hold it in `blockingFor`:
    /// the reply is then awaited that long plus the command timeout, so a long wait is not mistaken
    /// for a frozen server, and a frozen server still ends the call.
    @discardableResult
    public func command(_ arguments: [any RedisArgument], blockingFor block: Duration = .zero) throws(RedisError) -> RedisValue {
        let reply = try roundTrip([arguments], within: configuration.commandTimeout + block)[0]
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    /// Sends all `commands` in one write, then reads their replies, in order. An error reply is
    /// an `.error` value in its place; only a broken connection throws (and then some of the
    /// commands may have run).
    public func pipeline(_ commands: [[any RedisArgument]]) throws(RedisError) -> [RedisValue] {
        try roundTrip(commands, within: configuration.commandTimeout)
    }

    /// Runs `commands` with every read and write given up after `deadline`, following Redis
    /// Cluster's redirects; a failure drops the connection, so that a late reply is never read as
    /// the next command's.
    private func roundTrip(_ commands: [[any RedisArgument]], within deadline: Duration) throws(RedisError) -> [RedisValue] {
        try followingRedirects(commands) { commands throws(RedisError) in try roundTripOnce(commands, within: deadline) }
    }

    private func roundTripOnce(_ commands: [[any RedisArgument]], within deadline: Duration) throws(RedisError) -> [RedisValue] {
        guard !commands.isEmpty else { return [] }
        let context = try connectedContext()
        do throws(RedisError) {
            let extended = deadline != configuration.commandTimeout
            if extended { try setTimeout(deadline, on: context) }
            let replies = try exchange(commands, on: context, deadline: deadline)
            if extended { try setTimeout(configuration.commandTimeout, on: context) }
            return replies
        } catch {
            disconnect()
            throw error
        }
    }

    /// Sets SO_RCVTIMEO and SO_SNDTIMEO: hiredis's blocking reads and writes each give up after `timeout`.
    private func setTimeout(_ timeout: Duration, on context: UnsafeMutablePointer<redisContext>) throws(RedisError) {
        guard redisSetTimeout(context, timeval(timeout)) == REDIS_OK else {
            throw .connectionLost(endpoint: configuration.endpoint.description, reason: errorText(context))
        }
    }

    private func connectedContext() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        if let context { return context }
        let fresh: UnsafeMutablePointer<redisContext>
        do {
            fresh = try connect()
        } catch {
            guard configuration.endpoint != seedEndpoint else { throw error }
            configuration.endpoint = seedEndpoint
            fresh = try connect()
        }
        context = fresh
        return fresh
    }

    func disconnect() {
        if let context { redisFree(context) }
        context = nil
    }

    /// Opens the socket, sets the command timeout, authenticates and selects the database.
    private func connect() throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        let endpoint = configuration.endpoint.description
        let connectTimeout = timeval(configuration.connectTimeout)
        let opened = switch configuration.endpoint {
        case .tcp(let host, let port): redisConnectWithTimeout(host, Int32(port), connectTimeout)
        case .unixSocket(let path): redisConnectUnixWithTimeout(path, connectTimeout)
        }
        guard let context = opened else {
            throw .connectFailed(endpoint: endpoint, reason: "hiredis could not allocate a connection")
        }
        do throws(RedisError) {
            guard context.pointee.err == 0,
                redisSetTimeout(context, timeval(configuration.commandTimeout)) == REDIS_OK
            else { throw .connectFailed(endpoint: endpoint, reason: errorText(context)) }
            // Keep-alive probes notice a peer that vanished without closing (host down, NAT dropped).
            if case .tcp = configuration.endpoint, redisEnableKeepAlive(context) != REDIS_OK {
                throw .connectFailed(endpoint: endpoint, reason: errorText(context))
            }
            try authenticateAndSelect(on: context)
            return context
        } catch {
            redisFree(context)
            throw error
        }
    }

    private func authenticateAndSelect(on context: UnsafeMutablePointer<redisContext>) throws(RedisError) {
        let endpoint = configuration.endpoint.description
        var commands: [[any RedisArgument]] = []
        if let password = configuration.password {
            commands.append(["AUTH"] + (configuration.username.map { [$0] } ?? []) + [password])
        }
        // SELECT even database 0: it proves the server accepts us, so a missing password shows
        // up here as NOAUTH rather than at the first real command.
        commands.append(["SELECT", configuration.database])

        let replies: [RedisValue]
        do throws(RedisError) {
            replies = try exchange(commands, on: context, deadline: configuration.commandTimeout)
        } catch .timeout(_, let after) {
            throw .connectFailed(endpoint: endpoint, reason: "no reply to AUTH/SELECT within \(after)")
        } catch .connectionLost(_, let reason) {
            throw .connectFailed(endpoint: endpoint, reason: reason)
        }

        if configuration.password != nil, case .error(let message) = replies[0] {
            throw .authenticationFailed(endpoint: endpoint, message: message)
        }
        if case .error(let message) = replies.last {
            if message.hasPrefix("NOAUTH") { throw .authenticationFailed(endpoint: endpoint, message: message) }
            throw .connectFailed(endpoint: endpoint, reason: "SELECT \(configuration.database) failed: \(message)")
        }
    }

    /// Appends `commands` to hiredis's output buffer and reads one reply per command (the first
    /// read flushes the buffer). Throws only when the connection is unusable; the caller drops it.
    /// `deadline` is the socket timeout in force, for the error.
    private func exchange(
        _ commands: [[any RedisArgument]], on context: UnsafeMutablePointer<redisContext>, deadline: Duration
    ) throws(RedisError) -> [RedisValue] {
        for command in commands {
            let status = EncodedCommand(command).withArgv { redisAppendCommandArgv(context, $0, $1, $2) }
            guard status == REDIS_OK else { throw transportError(context, errno: 0, deadline: deadline) }  // out of memory
        }
        var replies: [RedisValue] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var reply: UnsafeMutableRawPointer?
            let status = redisGetReply(context, &reply)
            let failure = errno  // read at once, before anything else can change it
            guard status == REDIS_OK, let reply else { throw transportError(context, errno: failure, deadline: deadline) }
            replies.append(RedisValue(copying: reply.assumingMemoryBound(to: redisReply.self)))
            freeReplyObject(reply)
        }
        return replies
    }

    private func transportError(
        _ context: UnsafeMutablePointer<redisContext>, errno code: Int32, deadline: Duration
    ) -> RedisError {
        let endpoint = configuration.endpoint.description
        // hiredis 0.14 has no timeout error code: an expired SO_RCVTIMEO/SO_SNDTIMEO surfaces as
        // an I/O error with errno EAGAIN.
        if context.pointee.err == REDIS_ERR_IO, code == EAGAIN || code == EWOULDBLOCK {
            return .timeout(endpoint: endpoint, after: deadline)
        }
        return .connectionLost(endpoint: endpoint, reason: errorText(context))
    }

    private func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

/// hiredis writes with write(2), which raises SIGPIPE on a socket the server has closed; the
/// default action would kill the whole process. Ignored, the write fails with EPIPE instead and
/// surfaces as `RedisError.connectionLost`. Initialized once, on first use (globals are lazy).
private let brokenPipeSignalIgnored: Void = {
    _ = signal(SIGPIPE, SIG_IGN)
}()

extension timeval {
    /// Rounded down to microseconds, but at least one: a zero timeval means "wait forever".
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let microseconds = max(attoseconds / 1_000_000_000_000, seconds == 0 ? 1 : 0)
        self.init(tv_sec: time_t(seconds), tv_usec: suseconds_t(microseconds))
    }
}
