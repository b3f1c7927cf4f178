import Foundation
import Synchronization

/// Tells a running loop (`OutboxRelay.run`, `WebhookDispatcher.run`) to finish. Set it from any
/// thread; the loop notices within a fraction of a second and returns after its current round.
public final class StopFlag: Sendable {
    private let stopped = Atomic<Bool>(false)

    public init() {}

    public func stop() { stopped.store(true, ordering: .relaxed) }

    public var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// How long a loop may take to notice `stop()` while it waits.
    static let checkInterval: Duration = .milliseconds(100)

    /// Sleeps for `duration`, or less if the flag is set meanwhile.
    func sleep(for duration: Duration) {
        let deadline = ContinuousClock.now + duration
        while !isStopped {
            let remaining = deadline - .now
            guard remaining > .zero else { return }
            Thread.sleep(forTimeInterval: min(remaining, Self.checkInterval).seconds)
        }
    }
}

extension Duration {
    /// In seconds, for Foundation's `TimeInterval` APIs.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// In whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
