import Foundation
import Synchronization

/// Named threads started together and stopped together: a process's long-running loops.
///
/// Each thread's body watches `stop`; `stop(grace:)` sets it and waits for the bodies to return.
public final class ThreadGroup: Sendable {
    public let stop = StopSignal()
    private let running = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    public init() {}

    /// Starts `body` on a new thread named `name` (the kernel keeps 15 bytes of it).
    public func spawn(_ name: String, _ body: @escaping @Sendable (StopSignal) -> Void) {
        running.add(1, ordering: .relaxed)
        Thread { [self] in
            nameCurrentThread(name)
            body(stop)
            running.subtract(1, ordering: .releasing)
            finished.signal()
        }.start()
    }

    /// Sets the stop signal and waits up to `grace` for every body to return; false if some were
    /// still running at the deadline.
    @discardableResult
    public func stop(grace: Duration) -> Bool {
        stop.set()
        let deadline = DispatchTime.now() + grace.seconds
        while running.load(ordering: .acquiring) > 0 {
            if finished.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }
}
