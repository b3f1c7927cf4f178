import RedisClient

extension JobQueue {
    /// Renews the lease (visibility timeout) of reserved jobs, whichever consumers hold them: each
    /// counts as delivered just now, so `reclaim` gives it to no one else for another visibility
    /// timeout, and its delivery count stays as it was. One process's lease keeper calls it for all
    /// of its workers' jobs at once, on a handle of its own.
    ///
    /// A job its consumer no longer holds (settled, or reclaimed by another) is left as it is.
    /// Returns how many leases were renewed.
    @discardableResult
    public func renewLeases(of jobs: [ReservedJob]) throws(QueueError) -> Int {
        guard !jobs.isEmpty else { return 0 }
        let streams = keys.readyStreams
        var arguments: [any RedisArgument] = [QueueKeys.group]
        for reserved in jobs {
            guard let index = streams.firstIndex(of: reserved.stream) else {
                throw .invalidArgument("\(reserved.stream) is not one of this deployment's ready streams")
            }
            arguments += [index + 1, reserved.consumer, reserved.entryID]
        }
        let reply = try connection.evaluate(Scripts.renewLeases, keys: streams, arguments: arguments)
        guard let renewed = reply.int else { throw .unexpectedReply(operation: "renewLeases", reply: "\(reply)") }
        return Int(renewed)
    }
}
