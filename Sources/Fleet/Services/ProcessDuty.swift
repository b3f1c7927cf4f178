import FleetConfiguration
import JobQueue
import Lanes
import RedisClient
import Logging

/// What every background duty of a process is given: its settings, where it counts, where it
/// logs, and the clock it reads and waits on (the system's, but in tests and simulations).
public struct ProcessContext: Sendable {
    public let settings: FleetSettings
    public let metrics: FleetMetrics
    public let logger: Logger
    public let clock: any FleetClock

    public init(settings: FleetSettings, metrics: FleetMetrics, logger: Logger, clock: any FleetClock = SystemClock()) {
        (self.settings, self.metrics, self.logger, self.clock) = (settings, metrics, logger, clock)
    }
}

/// A long-running duty of a fleet process: a ServiceLifecycle service made from the process's
/// context (`ProcessRoot` lists them by role).
public protocol ProcessDuty: NamedService {
    var context: ProcessContext { get }
}

extension ProcessDuty {
    var settings: FleetSettings { context.settings }
    var metrics: FleetMetrics { context.metrics }
    var logger: Logger { context.logger }
    var clock: any FleetClock { context.clock }
}

extension ProcessDuty {
    /// Runs `step` on a thread of its own every `interval` (the first time at once when
    /// `startingNow`, else after one interval) until graceful shutdown, with a queue handle that the
    /// thread opens itself, named `consumer` (it reserves nothing). A failed step is logged as
    /// `failing` and tried again after `retry` (the handle's connection reconnects on its next call).
    func periodically(
        _ thread: String, every interval: Duration, startingNow: Bool, consumer: String = JobQueue.consumerName(thread: -1),
        retryingAfter retry: Duration? = nil, failing: String, _ step: @escaping @Sendable (JobQueue, StopSignal) throws -> Void
    ) async {
        await ThreadService(thread, grace: settings.redisTimeout * 2, logger: logger) { [settings, logger] _, stop in
            var queue: JobQueue?
            var pause = startingNow ? Duration.zero : interval
            while stop.sleep(pause) {
                pause = interval
                do {
                    let current = try queue ?? JobQueue(
                        connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                        consumer: consumer)
                    queue = current
                    try step(current, stop)
                } catch {
                    logger.error("\(failing); trying again", metadata: ["error": "\(error)"])
                    pause = retry ?? interval
                }
            }
        }.run()
    }
}
