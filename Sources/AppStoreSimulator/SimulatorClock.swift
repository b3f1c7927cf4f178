import Foundation
import Synchronization

/// The simulator's idea of now: real time shifted by an offset. It starts at a chosen moment and then
/// runs at real speed; tests move it (set or advance) so renewals, expiries and outages end on demand,
/// or stop it, so that two answers given a few milliseconds apart describe the same moment.
public final class SimulatorClock: Sendable {
    private let offsetMs: Atomic<Int64>
    /// The moment the clock stands still at, or `running`.
    private let stoppedAtMs = Atomic<Int64>(running)
    private static let running = Int64.min

    /// Starts at `startMs` (ms since 1970), or at the real time when nil.
    public init(startMs: Int64? = nil) {
        offsetMs = Atomic(startMs.map { $0 - Self.realNowMs() } ?? 0)
    }

    /// Milliseconds since 1970 on the simulator's clock.
    public var nowMs: Int64 {
        let stopped = stoppedAtMs.load(ordering: .relaxed)
        return stopped != Self.running ? stopped : Self.realNowMs() + offsetMs.load(ordering: .relaxed)
    }

    /// Jumps to `milliseconds` (since 1970); the clock keeps running from there, or with `stopped`,
    /// stands still there until the next `set`.
    public func set(nowMs milliseconds: Int64, stopped: Bool = false) {
        offsetMs.store(milliseconds - Self.realNowMs(), ordering: .relaxed)
        stoppedAtMs.store(stopped ? milliseconds : Self.running, ordering: .relaxed)
    }

    /// Moves the clock forward (or back, for a negative amount).
    public func advance(byMs milliseconds: Int64) {
        offsetMs.add(milliseconds, ordering: .relaxed)
        let stopped = stoppedAtMs.load(ordering: .relaxed)
        if stopped != Self.running { stoppedAtMs.store(stopped + milliseconds, ordering: .relaxed) }
    }

    static func realNowMs() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
