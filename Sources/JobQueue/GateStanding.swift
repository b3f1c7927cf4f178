import RedisClient

/// What stops the fleet from calling Apple right now, read in one round trip: the fleet's halt or
/// pause, and each group's and each app's halt, each with since when. The console's banner.
public struct GateStanding: Sendable, Hashable {
    public struct Halt: Sendable, Hashable {
        public var reason: String
        /// When it began, in ms since the epoch (Redis clock); nil for a halt from before it was noted.
        public var since: Int64?

        public init(reason: String, since: Int64?) {
            self.reason = reason
            self.since = since
        }
    }

    public var fleet: Halt?
    /// Until when the fleet is paused (ms, Redis clock); a time past means a probe decides.
    public var pausedUntil: Int64?
    /// By group name (the Server API's), then by app name: only those halted.
    public var groups: [String: Halt]
    public var apps: [String: Halt]

    /// Whether anything stops anything.
    public var isClear: Bool { fleet == nil && pausedUntil == nil && groups.isEmpty && apps.isEmpty }
}

extension FleetGate {
    /// Reads the fleet's halt and pause, and the halts of `groups` and `apps`, at one instant.
    public func standing(groups: [String], apps: [String]) throws(QueueError) -> GateStanding {
        let halts = [keys.halted] + groups.map { keys.halted($0) } + apps.map { keys.halted(app: $0) }
        let reply = try connection.execute(["MGET", keys.paused] + halts.flatMap { [$0, keys.since($0)] })
        guard let values = reply.array, values.count == 1 + 2 * halts.count else {
            throw .unexpectedReply(operation: "standing", reply: "\(reply)")
        }
        let read: [GateStanding.Halt?] = (0..<halts.count).map { index in
            values[1 + 2 * index].string.map { GateStanding.Halt(reason: $0, since: values[2 + 2 * index].string.flatMap { Int64($0) }) }
        }
        func named(_ names: [String], from offset: Int) -> [String: GateStanding.Halt] {
            Dictionary(uniqueKeysWithValues: names.enumerated().compactMap { index, name in read[offset + index].map { (name, $0) } })
        }
        return GateStanding(
            fleet: read[0], pausedUntil: values[0].string.flatMap { Int64($0) },
            groups: named(groups, from: 1), apps: named(apps, from: 1 + groups.count))
    }
}
