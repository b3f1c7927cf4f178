import RedisClient

extension JobQueue {
    /// Renews the leases of entries their consumers still hold: resets each one's idle time, so
    /// `reclaim` leaves it alone, without counting a delivery (XCLAIM … JUSTID). An entry settled
    /// meanwhile (acked, delayed, buried) or reclaimed by another consumer is skipped: XCLAIM on
    /// its own would take a reclaimed entry back from its new holder.
    /// KEYS ready streams. ARGV[1] group, ARGV[2…] triples of stream (its index in KEYS, from 1),
    /// consumer, entry id. Returns the number of leases renewed.
    private static let renewLeasesScript = RedisScript(ScriptPrologue.ownership + """
        local renewed = 0
        for i = 2, #ARGV, 3 do
            local stream, consumer, id = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
            if reservedBy(stream, ARGV[1], id, consumer) then
                redis.call('XCLAIM', stream, ARGV[1], consumer, 0, id, 'JUSTID')
                renewed = renewed + 1
            end
        end
        return renewed
        """)

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
        let reply = try connection.evaluate(Self.renewLeasesScript, keys: streams, arguments: arguments)
        guard let renewed = reply.int else { throw .unexpectedReply(operation: "renewLeases", reply: "\(reply)") }
        return Int(renewed)
    }
}
