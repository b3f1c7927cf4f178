import FleetConfiguration
import JobQueue
import Lanes
import RedisClient
import Logging
import Synchronization

/// What every background duty of a process is given: its settings, where it counts, where it
/// logs, the clock it reads and waits on (the system's, but in tests and simulations), and the
/// signals a test waits on instead of sleeping (nil in production).
public struct ProcessContext: Sendable {
    public let settings: FleetSettings
    public let metrics: FleetMetrics
    public let logger: Logger
    public let clock: any FleetClock
    public let signals: DutySignals?

    /// `clock`: nil for the one the settings name (`FleetSettings.processClock`); tests drive their own.
    public init(
        settings: FleetSettings, metrics: FleetMetrics, logger: Logger, clock: (any FleetClock)? = nil, signals: DutySignals? = nil
    ) {
        (self.settings, self.metrics, self.logger, self.signals) = (settings, metrics, logger, signals)
        self.clock = clock ?? settings.processClock()
    }
}

/// A long-running duty of a fleet process: a ServiceLifecycle service made from the process's
/// context (`ProcessRoot` lists them by role).
public protocol ProcessDuty: NamedService {
    var context: ProcessContext { get }
}

extension ProcessDuty {
    public var settings: FleetSettings { context.settings }
    public var metrics: FleetMetrics { context.metrics }
    public var logger: Logger { context.logger }
    public var clock: any FleetClock { context.clock }
}

extension ProcessDuty {
    /// The one shape of a periodic duty: `step` on a thread of its own (named `thread`) every
    /// `interval` of the process's clock until graceful shutdown, the first time at once when
    /// `startingNow`, else after one interval. `open` makes the step's handle on that thread (its
    /// connections), again after a failed step; a failure is logged as `failing` and the step
    /// tried again after `retry` (else the interval). `last` runs once as the duty stops, with the
    /// handle it had. Each step, done or failed, is told to the test signals under `thread`.
    public func every<Handle>(
        _ interval: Duration, thread: String, startingNow: Bool, grace: Duration? = nil, retryingAfter retry: Duration? = nil,
        open: @escaping @Sendable () throws -> Handle, failing: String,
        _ step: @escaping @Sendable (Handle, StopSignal) throws -> Void, last: (@Sendable (Handle) -> Void)? = nil
    ) async {
        await ThreadService(thread, grace: grace ?? settings.redisTimeout * 2, logger: logger) { [clock, logger, signals = context.signals] _, stop in
            var handle: Handle?
            var pause = startingNow ? Duration.zero : interval
            while clock.sleep(pause, unless: stop) {
                pause = interval
                do {
                    let current = try handle ?? open()
                    handle = current
                    try step(current, stop)
                    signals?.stepped(thread, failed: false)
                } catch {
                    logger.error("\(failing); trying again", metadata: ["error": "\(error)"])
                    handle = nil
                    pause = retry ?? interval
                    signals?.stepped(thread, failed: true)
                }
            }
            if let handle { last?(handle) }
        }.run()
    }

    /// `every` with a queue handle named `consumer` (it reserves nothing), the most common step.
    func periodically(
        _ thread: String, every interval: Duration, startingNow: Bool, consumer: String = JobQueue.consumerName(thread: -1),
        retryingAfter retry: Duration? = nil, failing: String, _ step: @escaping @Sendable (JobQueue, StopSignal) throws -> Void
    ) async {
        await every(interval, thread: thread, startingNow: startingNow, retryingAfter: retry, open: { [settings] in
            try JobQueue(
                connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                consumer: consumer, clock: settings.scriptClock)
        }, failing: failing, step)
    }
}

/// What a process's duties did, for tests to wait on instead of sleeping: each periodic duty's
/// steps by its thread's name (River's test signals, asynq's test hooks).
public final class DutySignals: Sendable {
    private struct State {
        var steps: [String: (done: Int, failed: Int)] = [:]
        var waiting: [(thread: String, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// How many steps of `thread` were done and failed.
    public func steps(of thread: String) -> (done: Int, failed: Int) { state.withLock { $0.steps[thread] ?? (0, 0) } }

    /// Returns once `thread` has taken `count` steps in all (done or failed).
    public func waitForSteps(of thread: String, _ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                let taken = state.steps[thread].map { $0.done + $0.failed } ?? 0
                if taken >= count { return true }
                state.waiting.append((thread, count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func stepped(_ thread: String, failed: Bool) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var counts = state.steps[thread] ?? (0, 0)
            if failed { counts.failed += 1 } else { counts.done += 1 }
            state.steps[thread] = counts
            let taken = counts.done + counts.failed
            let ready = state.waiting.filter { $0.thread == thread && $0.count <= taken }
            state.waiting.removeAll { $0.thread == thread && $0.count <= taken }
            return ready.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }
}
