import Foundation
import Synchronization

/// Runs an async function to its end on the calling thread: a thread of the fleet's own (a
/// worker's) that needs the result of async code that never waits on I/O, such as
/// swift-certificates' chain validation, which is async only in its signature. The task's jobs
/// run here as they are enqueued, so nothing hops to Swift's pool and no thread waits for a task
/// running elsewhere.
package final class CallingThreadExecutor: TaskExecutor {
    private struct State {
        var jobs: [UnownedJob] = []
        var finished = false
    }

    private let state = Mutex(State())
    /// The calling thread waits on it between jobs; `enqueue` and the end of the task signal it.
    private let changed = NSCondition()

    private init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        update { $0.jobs.append(job) }
    }

    /// Runs `body` on this thread and returns what it returns.
    package static func run<Result: Sendable>(_ body: @escaping @Sendable () async -> Result) -> Result {
        let executor = CallingThreadExecutor()
        let result = Mutex<Result?>(nil)
        Task(executorPreference: executor) {
            let value = await body()
            result.withLock { $0 = value }
            executor.update { $0.finished = true }
        }
        while let job = executor.nextJob() {
            job.runSynchronously(on: executor.asUnownedTaskExecutor())
        }
        return result.withLock { $0! }
    }

    /// The next job to run here, waiting for one; nil once the task has ended.
    private func nextJob() -> UnownedJob? {
        changed.lock()
        defer { changed.unlock() }
        while true {
            let (job, finished) = state.withLock { state in
                (state.jobs.isEmpty ? nil : state.jobs.removeFirst(), state.finished)
            }
            if let job { return job }
            if finished { return nil }
            changed.wait()
        }
    }

    private func update(_ change: (inout State) -> Void) {
        changed.lock()
        state.withLock { change(&$0) }
        changed.signal()
        changed.unlock()
    }
}
