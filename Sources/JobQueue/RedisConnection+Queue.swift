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

    /// Runs one command and turns Redis errors into `QueueError.redis`.
    @discardableResult
    func execute(_ arguments: [any RedisArgument]) throws(QueueError) -> RedisValue {
        do {
            return try command(arguments)
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

    /// The EVALSHA command running `script`, for `send`.
    func scriptCommand(
        _ script: RedisScript, keys: [String], arguments: [any RedisArgument]
    ) throws(QueueError) -> [any RedisArgument] {
        do {
            return try evalshaCommand(running: script, keys: keys, arguments: arguments)
        } catch {
            throw .redis(error)
        }
    }
}
