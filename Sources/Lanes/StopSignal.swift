import Dispatch
import Synchronization

/// A flag that threads' loops watch: set once, from any thread, when they should wind down.
/// Sleepers (`sleep(_:)`) wake the moment it is set, without polling.
public final class StopSignal: Sendable {
    private let stopped = Atomic<Bool>(false)
    /// Called once when the flag is set: what else must wake (a driven clock's sleepers).
    private let observers = Mutex<[@Sendable () -> Void]>([])
    /// Entered once at birth and left once when set: a wait on it ends when the flag is set.
    private let raised = DispatchGroup()

    public init() { raised.enter() }

    deinit { set() }  // a group still entered must not be released

    public var isSet: Bool { stopped.load(ordering: .acquiring) }

    public func set() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        raised.leave()
        for observer in observers.withLock({ $0 }) { observer() }
    }

    /// Calls `body` when the flag is set (at once if it is).
    public func whenSet(_ body: @escaping @Sendable () -> Void) {
        observers.withLock { $0.append(body) }
        if isSet { body() }
    }

    /// Sleeps for `duration`, waking at once when the flag is set.
    /// Returns false if it woke because of the flag.
    @discardableResult
    public func sleep(_ duration: Duration) -> Bool {
        guard duration > .zero else { return !isSet }
        return raised.wait(timeout: .now() + duration.seconds) == .timedOut
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
