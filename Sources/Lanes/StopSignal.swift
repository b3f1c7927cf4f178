import Foundation
import Synchronization

/// A flag that threads' loops watch: set once, from any thread, when they should wind down.
/// Loops notice it within 50 ms, also while they sleep through `sleep(_:)`.
public final class StopSignal: Sendable {
    private let stopped = Atomic<Bool>(false)

    public init() {}

    public var isSet: Bool { stopped.load(ordering: .acquiring) }

    public func set() { stopped.store(true, ordering: .releasing) }

    /// Sleeps for `duration`, waking early (within 50 ms) once the flag is set.
    /// Returns false if it woke because of the flag.
    @discardableResult
    public func sleep(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while !isSet {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return true }
            Thread.sleep(forTimeInterval: min(left.seconds, 0.05))
        }
        return false
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Up to `fraction` of this duration more, at random: spreads out workers that would wake together.
    public func withJitter(_ fraction: Double = 0.2) -> Duration {
        self + .milliseconds(Int64(Double.random(in: 0...fraction) * seconds * 1000))
    }
}
