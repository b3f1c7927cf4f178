import Foundation
import Synchronization

/// A dedicated thread that owns one resource (a database connection, say) and runs work on it,
/// one item at a time, in arrival order.
///
/// Blocking C I/O must never run on Swift's cooperative pool or on Dispatch's global queues: on a
/// 2-core machine they run two items at a time, so one slow server call stalls every task. A lane
/// gives that I/O its own thread. The resource is created on the lane's thread and never leaves it,
/// so it needs no locking and need not be `Sendable`: the compiler sees that only the thread's own
/// local variable holds it.
public final class Lane<Resource>: Sendable {
    private typealias Work = @Sendable (inout Resource?) -> Void

    private struct Inbox {
        var work: [Work] = []
        var closed = false
    }

    private let inbox = Mutex(Inbox())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    private let makeResource: @Sendable () throws -> Resource

    /// Starts the thread. `makeResource` runs on it, lazily, before the first work item and again
    /// for the next one if it failed (its error goes to the caller whose work needed it).
    public init(name: String, makeResource: @escaping @Sendable () throws -> Resource) {
        self.makeResource = makeResource
        let thread = Thread { [inbox, wakeUp, stopped] in
            var resource: Resource?
            while true {
                wakeUp.wait()
                let next: Work? = inbox.withLock { state in
                    state.work.isEmpty ? nil : state.work.removeFirst()
                }
                guard let next else { break }  // woken with nothing to do: closed
                next(&resource)
            }
            resource = nil  // releases the resource on its own thread
            stopped.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Work items queued or running.
    public var load: Int { inbox.withLock { $0.work.count } }

    /// Runs `body` on the lane's thread with its resource and returns the result.
    public func run<T: Sendable>(
        _ body: @escaping @Sendable (inout Resource) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let makeResource = self.makeResource
            let accepted = submit { resource in
                do {
                    if resource == nil { resource = try makeResource() }
                    continuation.resume(returning: try body(&resource!))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            if !accepted { continuation.resume(throwing: LaneError.shutDown) }
        }
    }

    /// Lets queued work finish, then stops the thread and releases the resource. Later `run`
    /// calls throw `LaneError.shutDown`. Blocks until the thread is gone.
    public func shutdown() {
        let first = inbox.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wakeUp.signal()  // one extra wake-up with an empty inbox ends the loop
        stopped.wait()
    }

    private func submit(_ work: @escaping Work) -> Bool {
        let accepted = inbox.withLock { state in
            guard !state.closed else { return false }
            state.work.append(work)
            return true
        }
        if accepted { wakeUp.signal() }
        return accepted
    }
}

public enum LaneError: Error, CustomStringConvertible {
    case shutDown

    public var description: String { "the lane was shut down; no more work is accepted" }
}
