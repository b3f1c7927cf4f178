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
}
