import Foundation
import Lanes
import Synchronization

/// What this process's workers have learned of a fleet-wide pause or halt. A worker that booked a
/// time slot sleeps until it; if meanwhile another worker here saw the fleet stop (an admission
/// said paused or halted, or Apple's failures started a pause), the sleeper does not call Apple
/// after all. Workers of other processes learn it from their own next answer or admission, so a
/// pause costs Apple a few calls per process, not every booked slot.
final class PauseBoard: Sendable {
    private let clock: any FleetClock
    private let pausedUntil = Mutex<Date?>(nil)

    /// `clock`: the process's.
    init(clock: any FleetClock) {
        self.clock = clock
    }

    /// Notes that the fleet calls Apple no more for `duration` from now.
    func note(pausedFor duration: Duration) {
        guard duration > .zero else { return }
        let end = clock.after(duration)
        pausedUntil.withLock { $0 = max($0 ?? end, end) }
    }

    /// Notes that the fleet calls Apple again (this process's probe got an answer).
    func clear() {
        pausedUntil.withLock { $0 = nil }
    }

    /// What is left of the pause noted last; nil when none is running.
    func remaining() -> Duration? {
        let now = clock.now()
        return pausedUntil.withLock { until in
            guard let until, until > now else { return nil }
            return .seconds(until.timeIntervalSince(now))
        }
    }
}
