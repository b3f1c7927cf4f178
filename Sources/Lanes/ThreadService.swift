import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Blocking loops, each on a thread of its own, as one ServiceLifecycle service: the bridge
/// between a process's `ServiceGroup` and the work that blocks in C calls (Redis, PostgreSQL,
/// Apple), which must never run on Swift's cooperative pool.
///
/// `run` starts `threads` threads, each running `body(index, stop)`, and returns when all of
/// them have. Graceful shutdown (SIGTERM, SIGINT) or cancellation sets `stop`; the bodies finish
/// what they hold and return. A body still running `grace` after that is left behind: `run`
/// returns anyway, so the group goes on stopping the services listed before this one, and the
/// process exits with the thread still in its call (its jobs come back after the visibility timeout).
public struct ThreadService: Service, CustomStringConvertible {
    /// The threads' name, suffixed with their index when there are several (the kernel keeps 15 bytes).
    public let name: String
    public let threads: Int
    public let grace: Duration
    let logger: Logger
    let body: @Sendable (_ index: Int, _ stop: StopSignal) -> Void

    public init(
        _ name: String, threads: Int = 1, grace: Duration, logger: Logger,
        _ body: @escaping @Sendable (_ index: Int, _ stop: StopSignal) -> Void
    ) {
        precondition(threads >= 1, "a thread service needs at least one thread")
        (self.name, self.threads, self.grace, self.logger, self.body) = (name, threads, grace, logger, body)
    }

    public var description: String { threads == 1 ? name : "\(name) ×\(threads)" }

    public func run() async { await runThreads() }

    /// `run`, saying whether every thread ended within the grace (false: some were left behind).
    @discardableResult
    public func runThreads() async -> Bool {
        let stop = StopSignal()
        let ended = Ending(threads: threads)
        for index in 0..<threads {
            let threadName = threads == 1 ? name : "\(name)-\(index)"
            Thread { [body] in
                nameCurrentThread(threadName)
                body(index, stop)
                ended.threadEnded()
            }.start()
        }
        let grace = grace
        let allEnded = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await ended.wait()
            } onGracefulShutdown: {
                stop.set()
                ended.giveUp(after: grace)
            }
        } onCancel: {
            stop.set()
            ended.giveUp(after: grace)
        }
        if !allEnded {
            logger.warning("threads still busy after the grace period; leaving them", metadata: [
                "service": "\(self)", "grace": "\(grace)",
            ])
        }
        return allEnded
    }
}

/// Counts the threads that ended, and wakes the one waiter when all have, or when the grace
/// given after the stop has run out (then with false).
private final class Ending: Sendable {
    private struct State {
        var running: Int
        var waiter: CheckedContinuation<Bool, Never>?
        var result: Bool?
    }

    private let state: Mutex<State>

    init(threads: Int) { state = Mutex(State(running: threads)) }

    func threadEnded() {
        finish(ifAllEnded: true) { $0.running -= 1 }
    }

    func giveUp(after grace: Duration) {
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.seconds) { [self] in
            finish(ifAllEnded: false) { _ in }
        }
    }

    /// Waits until every thread ended (true) or the grace ran out (false).
    func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            let ready: Bool? = state.withLock { state in
                if let result = state.result ?? (state.running == 0 ? true : nil) { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Applies `change`; settles the result (true once no thread runs, or `allEnded` false now).
    private func finish(ifAllEnded allEnded: Bool, _ change: (inout State) -> Void) {
        let woken: (CheckedContinuation<Bool, Never>, Bool)? = state.withLock { state in
            change(&state)
            guard state.result == nil else { return nil }
            let result: Bool? = state.running == 0 ? true : (allEnded ? nil : false)
            guard let result else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter.map { ($0, result) }
        }
        if let (waiter, result) = woken { waiter.resume(returning: result) }
    }
}

/// A service that describes itself by its type's name alone. `ServiceGroup` logs each service's
/// description, and Swift's default one prints every stored property: settings with their URLs
/// and hosts, which logs must not carry.
public protocol NamedService: Service, CustomStringConvertible {}

extension NamedService {
    public var description: String { String(describing: Self.self) }
}
