/// A Lua script. Connections run it with EVALSHA, so after the first use only its SHA-1 travels.
public struct RedisScript: Sendable, Hashable {
    /// The Lua source, as given to SCRIPT LOAD.
    public let source: String

    public init(_ source: String) {
        self.source = source
    }
}

extension RedisConnection {
    /// Runs `script` with EVALSHA (KEYS and ARGV as given) and returns its reply; an error reply
    /// throws `RedisError.server`. The script is loaded with SCRIPT LOAD on first use; if the server
    /// has lost it since (SCRIPT FLUSH, restart, failover), it is loaded again and the call retried
    /// once, which is safe because NOSCRIPT means nothing ran.
    @discardableResult
    public func run(
        _ script: RedisScript, keys: [any RedisArgument] = [], arguments: [any RedisArgument] = []
    ) throws(RedisError) -> RedisValue {
        do throws(RedisError) {
            return try command(evalshaCommand(running: script, keys: keys, arguments: arguments))
        } catch .server(let message) where message.hasPrefix("NOSCRIPT") {
            scriptHashes[script.source] = nil
            return try command(evalshaCommand(running: script, keys: keys, arguments: arguments))
        }
    }

    /// The EVALSHA command that runs `script`, to put in a `pipeline`; loads the script first if
    /// this connection has not loaded it yet. Unlike `run`, a pipeline does not recover from a
    /// lost script: should the server lose it in between, that entry is an `.error("NOSCRIPT …")`.
    public func evalshaCommand(
        running script: RedisScript, keys: [any RedisArgument] = [], arguments: [any RedisArgument] = []
    ) throws(RedisError) -> [any RedisArgument] {
        ["EVALSHA", try sha(of: script), keys.count] + keys + arguments
    }

    private func sha(of script: RedisScript) throws(RedisError) -> String {
        if let sha = scriptHashes[script.source] { return sha }
        let reply = try command("SCRIPT", "LOAD", script.source)
        guard let sha = reply.string else { throw .server("SCRIPT LOAD replied \(reply) instead of a SHA-1") }
        scriptHashes[script.source] = sha
        return sha
    }
}
