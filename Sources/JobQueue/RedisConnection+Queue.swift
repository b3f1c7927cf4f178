import RedisClient

extension RedisConnection {
    /// Runs `script` and turns Redis errors into `QueueError.redis`.
    @discardableResult
    func evaluate(
        _ script: RedisScript, keys: [String], arguments: [any RedisArgument] = []
    ) throws(QueueError) -> RedisValue {
        do {
            return try run(script, keys: keys, arguments: arguments)
        } catch {
            throw .redis(error)
        }
    }

    /// Runs one command (see `RedisConnection.command(_:blockingFor:)`) and turns Redis errors into
    /// `QueueError.redis`.
    @discardableResult
    func execute(_ arguments: [any RedisArgument], blockingFor block: Duration = .zero) throws(QueueError) -> RedisValue {
        do {
            return try command(arguments, blockingFor: block)
        } catch {
            throw .redis(error)
        }
    }

    /// Runs `commands` in one pipeline (see `RedisConnection.pipeline`); a broken connection
    /// becomes `QueueError.redis`, error replies stay `.error` values.
    func send(_ commands: [[any RedisArgument]]) throws(QueueError) -> [RedisValue] {
        do {
            return try pipeline(commands)
        } catch {
            throw .redis(error)
        }
    }

    /// Runs `script` once per call in one pipeline (see `RedisConnection.run(_:pipelining:)`); an
    /// error reply among them becomes `QueueError.redis`.
    func evaluate(_ script: RedisScript, pipelining calls: [RedisScriptCall]) throws(QueueError) -> [RedisValue] {
        let replies: [RedisValue]
        do {
            replies = try run(script, pipelining: calls)
        } catch {
            throw .redis(error)
        }
        for case .error(let message) in replies { throw .redis(.server(message)) }
        return replies
    }
}
