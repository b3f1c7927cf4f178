import Foundation
import Synchronization

/// A dedicated thread that owns one resource (a database connection, say) and runs work on it,
/// one item at a time, in arrival order.
///
/// Blocking C I/O must never run on Swift's cooperative pool or on Dispatch's global queues: on a
/// 2-core machine they run two items at a time, so one slow server call stalls every task. A lane
/// gives that I/O its own thread. The resource is created on the lane's thread and never leaves it,
/// so it needs no locking and need not be `Sendable`: only the thread's own local variable holds it.
public final class Lane<Resource>: Sendable {
    private let mailbox = Mailbox<Resource>()
    private let makeResource: @Sendable () throws -> Resource

    /// Starts the thread. `makeResource` runs on it, lazily, before the first work item and again
    /// for the next one if it failed (its error goes to the caller whose work needed it).
    public init(name: String, makeResource: @escaping @Sendable () throws -> Resource) {
        self.makeResource = makeResource
        let thread = Thread { [mailbox] in
            nameCurrentThread(name)
            var resource: Resource?
            while let work = mailbox.next() { work(&resource) }
            resource = nil  // releases the resource on its own thread
            mailbox.finished.signal()
        }
        thread.start()
    }

    /// Runs `body` on the lane's thread with its resource and returns the result.
    public func run<T: Sendable>(
        _ body: @escaping @Sendable (inout Resource) throws -> T
    ) async throws -> T {
        let makeResource = self.makeResource
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = mailbox.post { resource in
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
    /// calls throw `LaneError.shutDown`. Blocks until the resource is released; the thread's own
    /// teardown (its C libraries' thread-local state) may still run after (`CLibraries.prepare`).
    public func shutdown() {
        if mailbox.close() { mailbox.finished.wait() }
    }
}

public enum LaneError: Error, CustomStringConvertible {
    case shutDown

    public var description: String { "the lane was shut down; no more work is accepted" }
}

/// The lane's queue of work: posted from any thread, taken by the lane's thread alone.
private final class Mailbox<Resource>: Sendable {
    typealias Work = @Sendable (inout Resource?) -> Void

    private struct State {
        var work: [Work] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeUp = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)

    /// Queues `work` unless the mailbox is closed.
    func post(_ work: @escaping Work) -> Bool {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.work.append(work)
            return true
        }
        if accepted { wakeUp.signal() }
        return accepted
    }

    /// Blocks until there is work; nil once the mailbox is closed and drained.
    func next() -> Work? {
        wakeUp.wait()
        return state.withLock { state in
            state.work.isEmpty ? nil : state.work.removeFirst()
        }
    }

    /// Closes the mailbox; true for the first call only.
    func close() -> Bool {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if first { wakeUp.signal() }  // one wake-up more than there is work ends the loop
        return first
    }
}

/// Names the calling thread for the kernel (`top -H`, `/proc`, debuggers), cut to its 15-byte
/// limit. Foundation's `Thread.name` does not reliably reach the kernel on Linux, and
/// `pthread_setname_np` is not visible to Swift there, so this writes the name where Linux keeps it.
func nameCurrentThread(_ name: String) {
    try? String(name.utf8.prefix(15))?.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
}
