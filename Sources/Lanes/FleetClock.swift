import Foundation
import Synchronization

/// The one clock a fleet process reads its "now" from and waits on: the system's in production,
/// a driven one in tests, the demo and benchmarks, which move it by hand so that a whole process
/// runs on simulated time (`DrivenClock`). It travels in the process's context, so every wait and
/// every "now" outside Redis's scripts reads the same clock (the scripts read theirs through
/// `ScriptClock`).
public protocol FleetClock: Sendable {
    /// The time now, as the ledger and Apple write times.
    func now() -> Date
    /// Blocks the calling thread (a thread of its own, never one of Swift's pool) for `duration`
    /// of this clock, waking at once when `stop` is set. False when it woke because of `stop`.
    @discardableResult
    func sleep(_ duration: Duration, unless stop: StopSignal?) -> Bool
    /// Suspends the calling task for `duration` of this clock.
    func sleep(for duration: Duration) async throws
}

extension FleetClock {
    /// Blocks the calling thread for `duration` of this clock.
    public func sleep(_ duration: Duration) { sleep(duration, unless: nil) }

    /// The time `duration` from now.
    public func after(_ duration: Duration) -> Date { now().addingTimeInterval(duration.seconds) }
}

/// The system's clock: what production reads.
public struct SystemClock: FleetClock {
    public init() {}

    public func now() -> Date { Date() }

    @discardableResult
    public func sleep(_ duration: Duration, unless stop: StopSignal?) -> Bool {
        guard let stop else {
            if duration > .zero { Thread.sleep(forTimeInterval: duration.seconds) }
            return true
        }
        return stop.sleep(duration)
    }

    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

/// A clock that stands still until a test moves it (`advance`), waking every sleeper whose time
/// has come. A process on it does in a second what takes it days on the system's clock.
public final class DrivenClock: FleetClock {
    private struct State {
        var now: Date
        /// Each sleeping thread's wake-up time, by a ticket of its own.
        var sleepers: [Int: Date] = [:]
        /// Each sleeping task's wake-up time and continuation.
        var waiting: [Int: (wake: Date, continuation: CheckedContinuation<Void, Never>)] = [:]
        var tickets = 0
        /// The stop signals that already wake this clock's sleepers when set.
        var watched: Set<ObjectIdentifier> = []
        /// Tests waiting for this many sleepers.
        var awaitingSleepers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// The continuations of the tests whose sleepers are all asleep now.
        mutating func sleepersReady() -> [CheckedContinuation<Void, Never>] {
            let asleep = sleepers.count + waiting.count
            let ready = awaitingSleepers.filter { $0.count <= asleep }.map(\.continuation)
            awaitingSleepers.removeAll { $0.count <= asleep }
            return ready
        }
    }

    private let state: Mutex<State>
    /// Sleeping threads wait on it; `advance` and a stop signal broadcast it, holding its lock, so
    /// that no sleeper between its check and its wait misses a wake-up.
    private let condition = NSCondition()

    public init(at start: Date = Date()) { state = Mutex(State(now: start)) }

    public func now() -> Date { state.withLock { $0.now } }

    /// How many threads and tasks sleep on this clock.
    public var sleepers: Int { state.withLock { $0.sleepers.count + $0.waiting.count } }

    /// Returns once at least `count` threads and tasks sleep on this clock: a test moves the
    /// clock once the duties it drives have gone to sleep, so that none misses the move.
    public func waitForSleepers(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count + state.waiting.count >= count { return true }
                state.awaitingSleepers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Moves the clock on by `duration` and wakes every sleeper whose time has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.now = state.now.addingTimeInterval(duration.seconds)
            let now = state.now
            let due = state.waiting.filter { $0.value.wake <= now }
            for ticket in due.keys { state.waiting[ticket] = nil }
            return due.values.map(\.continuation)
        }
        wakeThreads()
        for continuation in due { continuation.resume() }
    }

    @discardableResult
    public func sleep(_ duration: Duration, unless stop: StopSignal?) -> Bool {
        if let stop, state.withLock({ $0.watched.insert(ObjectIdentifier(stop)).inserted }) {
            stop.whenSet { [weak self] in self?.wakeThreads() }
        }
        let (ticket, ready) = state.withLock { state -> (Int, [CheckedContinuation<Void, Never>]) in
            state.tickets += 1
            state.sleepers[state.tickets] = state.now.addingTimeInterval(duration.seconds)
            return (state.tickets, state.sleepersReady())
        }
        for continuation in ready { continuation.resume() }
        defer { _ = state.withLock { $0.sleepers.removeValue(forKey: ticket) } }
        condition.lock()
        defer { condition.unlock() }
        while true {
            if stop?.isSet == true { return false }
            if state.withLock({ state in state.sleepers[ticket].map { $0 <= state.now } ?? true }) { return true }
            condition.wait()
        }
    }

    public func sleep(for duration: Duration) async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (now, ready) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                let wake = state.now.addingTimeInterval(duration.seconds)
                guard wake > state.now else { return (true, []) }
                state.tickets += 1
                state.waiting[state.tickets] = (wake, continuation)
                return (false, state.sleepersReady())
            }
            if now { continuation.resume() }
            for waiter in ready { waiter.resume() }
        }
        try Task.checkCancellation()
    }

    private func wakeThreads() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
