import JobQueue
import Lanes
import Logging
import ServiceLifecycle

/// A worker process's processors: `concurrency` threads, each with its own connections, reserving
/// batches and verifying them (`Processor`). On graceful shutdown they stop reserving, finish the
/// batch in hand within `drain-grace`, and deregister; jobs still running then are left to be reclaimed.
public struct Processors: ProcessDuty {
    public let context: ProcessContext
    let jobs: JobsInHand

    public init(_ context: ProcessContext, jobs: JobsInHand) {
        (self.context, self.jobs) = (context, jobs)
    }

    /// The consumer name of processor `index`, in the consumer group and the live-worker set.
    static func consumer(_ index: Int) -> String { JobQueue.consumerName(thread: index) }

    public func run() async {
        let pauses = PauseBoard(clock: clock)
        let slots = SlotPool(tolerance: PacedGate.slotTolerance)
        logger.info("worker started", metadata: ["concurrency": "\(settings.concurrency)"])
        let drained = await ThreadService("rf-worker", threads: settings.concurrency, grace: settings.drainGrace, logger: logger) {
            [settings, jobs, metrics, logger, clock] index, stop in
            var logger = logger
            logger[metadataKey: "consumer"] = "\(Self.consumer(index))"
            keepRunning("worker", stop, clock, logger) {
                let connections = try Connections(settings: settings, consumer: Self.consumer(index), clock: clock)
                Processor(
                    index: index, settings: settings, connections: connections, stop: stop, pauses: pauses, slots: slots,
                    jobs: jobs, metrics: metrics, logger: logger
                ).run()
            }
        }.runThreads()
        if drained {
            logger.info("stopped cleanly")
        } else {
            logger.warning("the grace period ended with jobs still running; they will be reclaimed")
        }
    }
}
