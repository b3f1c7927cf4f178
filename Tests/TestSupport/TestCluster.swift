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
        public let configEpoch: Int
        public let slots: [ClosedRange<Int>]
        /// Slots the node is moving out or in ("[1632->-id]", "[1632-<-id]"), which only the node
        /// itself reports.
        public let slotsInMigration: [Int]
    }

    public let url: String
    let password = "receiptfleet-dev"

    /// Nil when scripts/services started no cluster.
    public static var fromEnvironment: TestCluster? {
        ProcessInfo.processInfo.environment["RECEIPTFLEET_CLUSTER_REDIS_URL"].map(TestCluster.init(url:))
    }

    public init(url: String) { self.url = url }

    /// Runs `body` with the cluster to itself, healthy: the tests that move slots and fail masters
    /// over (in several test targets) take turns, and each starts from a cluster whose every slot
    /// is served, with no migration left half done by a test that failed midway.
    public static func exclusively<T: Sendable>(_ body: (TestCluster) async throws -> T) async throws -> T {
        guard let cluster = fromEnvironment else { throw ClusterError("no cluster: scripts/services starts one") }
        return try await turns.taking {
            try await onOwnThread { try cluster.heal() }
            return try await body(cluster)
        }
    }

    private static let turns = Turns(width: 1)

    /// Ends any migration a failed test left behind (SETSLOT STABLE on the nodes that show one)
    /// and waits until every node says the cluster is up and all agree on who serves what, at
    /// which epoch: a failover right after another, before gossip settled, can lose its election.
    func heal() throws {
        for node in try nodes() {
            for slot in try nodes(from: node.port).flatMap(\.slotsInMigration) {
                try connect(port: node.port).command("CLUSTER", "SETSLOT", slot, "STABLE")
            }
        }
        let settled = try eventuallyOnThisThread(within: .seconds(15), every: .milliseconds(50)) {
            let ports = try nodes().map(\.port)
            let states = try ports.map { try connect(port: $0).command("CLUSTER", "INFO").string ?? "" }
            let views = try ports.map { try nodes(from: $0).sorted { $0.id < $1.id } }
            return states.allSatisfy({ $0.contains("cluster_state:ok") }) && views.allSatisfy({ $0 == views[0] })
        }
        if settled { return }
        throw ClusterError("the cluster did not settle within 15 s: see CLUSTER INFO and CLUSTER NODES on its nodes")
    }

    public func connect(port: Int? = nil) throws -> RedisConnection {
        var configuration = try RedisConfiguration(url: url)
        if let port { configuration.endpoint = .tcp(host: "127.0.0.1", port: port) }
        return try RedisConnection(configuration)
    }

    public func slot(of key: String) throws -> Int {
        Int(try connect().command("CLUSTER", "KEYSLOT", key).int ?? -1)
    }

    /// The cluster as the node on `port` (the seed by default) sees it (CLUSTER NODES).
    public func nodes(from port: Int? = nil) throws -> [Node] {
        let text = try connect(port: port).command("CLUSTER", "NODES").string ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 8, let address = fields[1].split(separator: "@").first,
                  let port = address.split(separator: ":").last.flatMap({ Int($0) }) else { return nil }
            let ranges = fields.dropFirst(8)
            let slots = ranges.filter { !$0.hasPrefix("[") }.compactMap { range -> ClosedRange<Int>? in
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                return bounds.isEmpty ? nil : bounds[0]...(bounds.last ?? bounds[0])
            }
            return Node(id: fields[0], port: port, isMaster: fields[2].contains("master"),
                        masterID: fields[3] == "-" ? nil : fields[3], configEpoch: Int(fields[6]) ?? -1, slots: slots,
                        slotsInMigration: ranges.filter { $0.hasPrefix("[") }.compactMap { Int($0.dropFirst().prefix { $0.isNumber }) })
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
        // One node's view lags the others for a moment after a failover: take only nodes that
        // say themselves that they are masters.
        guard let source = try master(of: slot),
              let target = try nodes().first(where: { $0.isMaster && $0.id != source.id && (try? isMaster(port: $0.port)) == true })
        else {
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
        // The target first, then the source, as redis-cli does: those two settle the move; the
        // other masters are told too (they would learn it from the cluster's gossip anyway).
        try to.command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
        try from.command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
        for node in try nodes() where node.isMaster && ![source.id, target.id].contains(node.id) {
            _ = try? connect(port: node.port).command("CLUSTER", "SETSLOT", slot, "NODE", target.id)
        }
        return target
    }

    /// What the node on `port` says of itself (ROLE), which is never behind.
    func isMaster(port: Int) throws -> Bool {
        try connect(port: port).command("ROLE").array?.first?.string == "master"
    }

    /// Promotes the replica of `slot`'s master (CLUSTER FAILOVER: the master hands over without
    /// losing a write) and waits until the cluster agrees. Returns the new master.
    @discardableResult
    public func failOver(slot: Int) throws -> Node {
        guard let master = try master(of: slot), let replica = try nodes().first(where: { $0.masterID == master.id }) else {
            throw ClusterError("slot \(slot)'s master has no replica")
        }
        // Done when the seed's view names the replica as the slot's master and the old master
        // says it is a replica now. A manual failover that loses its election is given up by
        // Redis after a few seconds; it is asked again then, as an operator would.
        for _ in 0..<3 {
            try connect(port: replica.port).command("CLUSTER", "FAILOVER")
            var promoted: Node?
            try eventuallyOnThisThread(within: .seconds(10), every: .milliseconds(50)) {
                if let now = try self.master(of: slot), now.id == replica.id, try !isMaster(port: master.port) { promoted = now }
                return promoted != nil
            }
            if let promoted { return promoted }
        }
        throw ClusterError("the replica on port \(replica.port) did not take over slot \(slot) in three tries of 10 s")
    }

    public struct ClusterError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
