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
    /// has lost it since (SCRIPT FLUSH, restart, failover), the call is retried once with EVAL,
    /// which is safe because NOSCRIPT means nothing ran.
    @discardableResult
    public func run(
        _ script: RedisScript, keys: [any RedisArgument] = [], arguments: [any RedisArgument] = []
    ) throws(RedisError) -> RedisValue {
        let reply = try run(script, pipelining: [RedisScriptCall(keys: keys, arguments: arguments)])[0]
        if case .error(let message) = reply { throw .server(message) }
        return reply
    }

    /// Runs `script` once per call, all in one pipeline, and returns one reply per call, in order;
    /// error replies are `.error` values in their place. Calls the server answered with NOSCRIPT
    /// (it lost the script: nothing of theirs ran) are run again, once, with EVAL and the whole
    /// source, which loads and runs in one step: another SCRIPT FLUSH cannot slip in between.
    /// They then run after the rest: should another client load the script again while the
    /// pipeline is in flight, calls behind the lost ones have run first.
    public func run(
        _ script: RedisScript, pipelining calls: [RedisScriptCall]
    ) throws(RedisError) -> [RedisValue] {
        var replies = try pipeline(calls.map { call throws(RedisError) in try evalsha(script, call) })
        let lost = replies.indices.filter { replies[$0].isNoScript }
        guard !lost.isEmpty else { return replies }
        scriptHashes[script.source] = nil
        let retried = try pipeline(lost.map { index in
            ["EVAL", script.source, calls[index].keys.count] + calls[index].keys + calls[index].arguments
        })
        for (index, reply) in zip(lost, retried) { replies[index] = reply }
        return replies
    }

    private func evalsha(_ script: RedisScript, _ call: RedisScriptCall) throws(RedisError) -> [any RedisArgument] {
        ["EVALSHA", try sha(of: script), call.keys.count] + call.keys + call.arguments
    }

    private func sha(of script: RedisScript) throws(RedisError) -> String {
        if let sha = scriptHashes[script.source] { return sha }
        let reply = try command("SCRIPT", "LOAD", script.source)
        guard let sha = reply.string else { throw .server("SCRIPT LOAD replied \(reply) instead of a SHA-1") }
        scriptHashes[script.source] = sha
        return sha
    }
}

/// The KEYS and ARGV of one run of a script.
public struct RedisScriptCall {
    public var keys: [any RedisArgument]
    public var arguments: [any RedisArgument]

    public init(keys: [any RedisArgument] = [], arguments: [any RedisArgument] = []) {
        self.keys = keys
        self.arguments = arguments
    }
}

extension RedisValue {
    fileprivate var isNoScript: Bool {
        if case .error(let message) = self { message.hasPrefix("NOSCRIPT") } else { false }
    }
}
