/// A fixed set of lanes, each with its own resource: a bounded connection pool for async code.
///
/// At most `size` resources exist and at most `size` work items run at once; more wait in the
/// queue of the least loaded lane. Work never runs on the caller's thread.
public final class LanePool<Resource>: Sendable {
    private let lanes: [Lane<Resource>]

    public init(name: String, size: Int, makeResource: @escaping @Sendable () throws -> Resource) {
        precondition(size > 0, "a pool needs at least one lane")
        lanes = (0..<size).map { Lane(name: "\(name)-\($0)", makeResource: makeResource) }
    }

    public var size: Int { lanes.count }

    /// Runs `body` on the least loaded lane with that lane's resource.
    public func run<T: Sendable>(
        _ body: @escaping @Sendable (inout Resource) throws -> T
    ) async throws -> T {
        let lane = lanes.min { $0.load < $1.load }!
        return try await lane.run(body)
    }

    /// Finishes queued work and releases every resource.
    public func shutdown() {
        for lane in lanes { lane.shutdown() }
    }
}
