import Foundation
import RedisClient

/// The Redis Cluster of `scripts/services` (3 masters, a replica each), and the two things an
/// operator does to it under load: move a slot to another master, and fail a master over to its
/// replica. Blocking: call it from a thread of its own.
public struct TestCluster: Sendable {
    public struct Node: Sendable, Equatable {
        public let id: String
        public let port: Int
        public let isMaster: Bool
        /// For a replica, its master's id.
        public let masterID: String?
        public let slots: [ClosedRange<Int>]
    }

    public let url: String
    let password = "receiptfleet-dev"

    /// Nil when scripts/services started no cluster.
    public static var fromEnvironment: TestCluster? {
        ProcessInfo.processInfo.environment["RECEIPTFLEET_CLUSTER_REDIS_URL"].map(TestCluster.init(url:))
    }

    public init(url: String) { self.url = url }

    public func connect(port: Int? = nil) throws -> RedisConnection {
        var configuration = try RedisConfiguration(url: url)
        if let port { configuration.endpoint = .tcp(host: "127.0.0.1", port: port) }
        return try RedisConnection(configuration)
    }

    public func slot(of key: String) throws -> Int {
        Int(try connect().command("CLUSTER", "KEYSLOT", key).int ?? -1)
    }

    public func nodes() throws -> [Node] {
        let text = try connect().command("CLUSTER", "NODES").string ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 8, let address = fields[1].split(separator: "@").first,
                  let port = address.split(separator: ":").last.flatMap({ Int($0) }) else { return nil }
            let slots = fields.dropFirst(8).compactMap { range -> ClosedRange<Int>? in
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                return bounds.isEmpty || range.hasPrefix("[") ? nil : bounds[0]...(bounds.last ?? bounds[0])
            }
            return Node(id: fields[0], port: port, isMaster: fields[2].contains("master"),
                        masterID: fields[3] == "-" ? nil : fields[3], slots: slots)
        }
    }

    public func master(of slot: Int) throws -> Node? {
        try nodes().first { $0.isMaster && $0.slots.contains { $0.contains(slot) } }
    }

    /// Moves `slot` to another master, key by key, as `redis-cli --cluster reshard` does; between
    /// marking the slot migrating and finishing, `whileMigrating` runs (clients get ASK then).
    /// Returns the new master.
    @discardableResult
    public func migrate(slot: Int, whileMigrating: () throws -> Void = {}) throws -> Node {
        guard let source = try master(of: slot),
              let target = try nodes().first(where: { $0.isMaster && $0.id != source.id }) else {
            throw ClusterError("no master serves slot \(slot), or no other master to move it to")
        }
        let (from, to) = (try connect(port: source.port), try connect(port: target.port))
        try to.command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.id)
        try from.command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.id)
        var first = true
        while true {
            let keys = try from.command("CLUSTER", "GETKEYSINSLOT", slot, 100).array?.compactMap(\.string) ?? []
            if keys.isEmpty { break }
            try from.command(["MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "AUTH", password, "KEYS"] + keys)
            if first { try whileMigrating(); first = false }
        }
        if first { try whileMigrating() }
        for node in try nodes() where node.isMaster {
            try connect(port: node.port).command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
        }
        return target
    }

    /// Promotes the replica of `slot`'s master (CLUSTER FAILOVER: the master hands over without
    /// losing a write) and waits until the cluster agrees. Returns the new master.
    @discardableResult
    public func failOver(slot: Int) throws -> Node {
        guard let master = try master(of: slot), let replica = try nodes().first(where: { $0.masterID == master.id }) else {
            throw ClusterError("slot \(slot)'s master has no replica")
        }
        try connect(port: replica.port).command("CLUSTER", "FAILOVER")
        for _ in 0..<200 {
            if let now = try self.master(of: slot), now.id == replica.id { return now }
            usleep(50_000)
        }
        throw ClusterError("the replica on port \(replica.port) did not take over slot \(slot) within 10 s")
    }

    public struct ClusterError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
