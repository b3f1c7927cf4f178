import RedisClient

/// How far one sweep's run (a scheduler pass: `SchedulerPassID`) has come (`QueueKeys.run`): its
/// jobs verified, dead, and still to go, and its dead letters replayed.
public struct RunTally: Sendable, Hashable, Codable {
    public var enqueued: Int
    /// Jobs acked: their result is durable (Apple's answer written, or nothing left to do).
    public var verified: Int
    /// Jobs in the dead letters (less those replayed into the run again).
    public var dead: Int
    /// Dead letters replayed into the run: each left `dead`, and counts again once it is verified or dies.
    public var replayed: Int
    /// When its latest job was settled (verified or dead), in ms since the epoch (Redis clock); nil before the first.
    public var lastSettledAt: Int64?

    public init(enqueued: Int, verified: Int, dead: Int, replayed: Int = 0, lastSettledAt: Int64? = nil) {
        self.enqueued = enqueued
        self.verified = verified
        self.dead = dead
        self.replayed = replayed
        self.lastSettledAt = lastSettledAt
    }

    /// Jobs still queued: ready, in flight or delayed (a replayed dead letter among them).
    public var toGo: Int { max(0, enqueued - verified - dead) }
}

extension JobQueue {
    /// The run's tally, or nil if it enqueued nothing or was enqueued longer than `runMemory` ago.
    public func tally(ofRun runID: String) throws(QueueError) -> RunTally? {
        try tallies(ofRuns: [runID])[0]
    }

    /// The tallies of `runIDs`, in order, in one round trip; nil where `tally(ofRun:)` answers nil.
    public func tallies(ofRuns runIDs: [String]) throws(QueueError) -> [RunTally?] {
        let replies = try connection.send(runIDs.map { ["HMGET", keys.run($0), "enqueued", "verified", "dead", "replayed", "last"] })
        return try replies.map { (reply) throws(QueueError) -> RunTally? in
            guard let fields = reply.array, fields.count == 5 else {
                throw .unexpectedReply(operation: "tally", reply: "\(reply)")
            }
            guard let enqueued = Self.count(fields[0]) else { return nil }
            return RunTally(enqueued: enqueued, verified: Self.count(fields[1]) ?? 0, dead: Self.count(fields[2]) ?? 0,
                            replayed: Self.count(fields[3]) ?? 0, lastSettledAt: fields[4].string.flatMap { Int64($0) })
        }
    }

    private static func count(_ value: RedisValue) -> Int? {
        value.string.flatMap { Int($0) }
    }
}
