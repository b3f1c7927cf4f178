import JobQueue
import Synchronization

/// The jobs a worker process holds, shared by its background duties: the processors hold their
/// batches here while they work on them, the lease keeper renews whatever is held, and the
/// reclaimer leaves the jobs it took back from dead workers with a processor (claimed in that
/// processor's name, so that it settles them as its own).
public final class JobsInHand: Sendable {
    private struct State {
        var held: Set<ReservedJob> = []
        /// Per processor, reclaimed jobs it has not started on yet.
        var reclaimed: [[ReservedJob]]
    }

    private let state: Mutex<State>

    public init(processors: Int) {
        state = Mutex(State(reclaimed: Array(repeating: [], count: processors)))
    }

    /// Every job held now.
    var held: [ReservedJob] { state.withLock { Array($0.held) } }

    /// Holds `jobs` while `body` runs. Whether `body` settles them or throws and leaves them
    /// reserved, they are let go when it returns: jobs left behind come back after the visibility timeout.
    func holding<T>(_ jobs: [ReservedJob], _ body: () throws -> T) rethrows -> T {
        state.withLock { $0.held.formUnion(jobs) }
        defer { state.withLock { $0.held.subtract(jobs) } }
        return try body()
    }

    /// The processor with nothing reclaimed waiting, if one has none.
    func processorWithoutReclaimedJobs() -> Int? {
        state.withLock { $0.reclaimed.firstIndex(where: \.isEmpty) }
    }

    /// Leaves reclaimed `jobs` (claimed in processor `index`'s name) for that processor; they are
    /// held, so their leases are renewed, until it has worked on them.
    func leave(_ jobs: [ReservedJob], for index: Int) {
        state.withLock { state in
            state.held.formUnion(jobs)
            state.reclaimed[index] += jobs
        }
    }

    /// The reclaimed jobs left for processor `index`, taken; they stay held until the processor's
    /// own `holding` lets them go.
    func takeReclaimed(for index: Int) -> [ReservedJob] {
        state.withLock { state in
            defer { state.reclaimed[index] = [] }
            return state.reclaimed[index]
        }
    }
}
