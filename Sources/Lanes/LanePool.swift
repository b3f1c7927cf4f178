import Synchronization

/// A fixed set of lanes, each with its own resource: a bounded connection pool for async code.
///
/// At most `size` resources exist and at most `size` work items run at once; more wait in the
/// queue of the least busy lane. Work never runs on the caller's thread.
public final class LanePool<Resource>: Sendable {
    private let lanes: [Lane<Resource>]
    /// Work items given to each lane and not yet finished. Chosen and counted under one lock, so
    /// callers arriving together spread over the lanes instead of piling onto the same one.
    private let busy: Mutex<[Int]>

    public init(name: String, size: Int, makeResource: @escaping @Sendable () throws -> Resource) {
        precondition(size > 0, "a pool needs at least one lane")
        lanes = (0..<size).map { Lane(name: "\(name)-\($0)", makeResource: makeResource) }
        busy = Mutex(Array(repeating: 0, count: size))
    }

    public var size: Int { lanes.count }

    /// Runs `body` on the least busy lane with that lane's resource.
    public func run<T: Sendable>(
        _ body: @escaping @Sendable (inout Resource) throws -> T
    ) async throws -> T {
        let index = busy.withLock { busy in
            let index = busy.indices.min { busy[$0] < busy[$1] }!
            busy[index] += 1
            return index
        }
        defer { busy.withLock { $0[index] -= 1 } }
        return try await lanes[index].run(body)
    }

    /// Finishes queued work and releases every resource.
    public func shutdown() {
        for lane in lanes { lane.shutdown() }
    }
}
