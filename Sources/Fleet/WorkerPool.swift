import Lanes
import Foundation
import JobQueue
import Logging
import Synchronization

/// A worker process's threads: `concurrency` processors, each with its own connections, and one
/// maintenance thread. Scaling out is starting more processes; they share nothing but Redis and
/// PostgreSQL.
public final class WorkerPool: Sendable {
    private let settings: FleetSettings
    private let logger: Logger
    private let stop = StopSignal()
    private let running = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    public init(settings: FleetSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Starts the threads and returns at once. A processor that cannot connect keeps trying.
    public func start() {
        let threads = settings.concurrency + 1
        running.store(threads, ordering: .relaxed)
        for index in 0..<settings.concurrency {
            spawn(name: "rf-worker-\(index)") { [settings, stop, logger] in
                var logger = logger
                let consumer = JobQueue.consumerName(thread: index)
                logger[metadataKey: "consumer"] = "\(consumer)"
                while !stop.isSet {
                    do {
                        let connections = try Connections(settings: settings, consumer: consumer)
                        Processor(settings: settings, connections: connections, stop: stop, logger: logger).run()
                    } catch {
                        logger.error("worker cannot connect; retrying in 2 s", metadata: ["error": "\(error)"])
                        stop.sleep(.seconds(2))
                    }
                }
            }
        }
        spawn(name: "rf-maintenance") { [settings, stop, logger] in
            Maintenance(settings: settings, stop: stop, logger: logger).run()
        }
        logger.info("worker started", metadata: ["concurrency": "\(settings.concurrency)"])
    }

    /// Stops reserving, lets the jobs in hand finish for up to `grace`, and returns whether every
    /// thread finished in time. Jobs still running at the deadline are left reserved, never acked:
    /// other workers reclaim them after the visibility timeout.
    @discardableResult
    public func drain(grace: Duration) -> Bool {
        stop.set()
        let deadline = DispatchTime.now() + grace.seconds
        while running.load(ordering: .acquiring) > 0 {
            if finished.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }

    private func spawn(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            body()
            running.subtract(1, ordering: .releasing)
            finished.signal()
        }
        thread.name = name
        thread.start()
    }
}
