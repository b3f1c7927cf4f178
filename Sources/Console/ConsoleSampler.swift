import Fleet
import Foundation
import Lanes
import Logging
import Operations
import ServiceLifecycle

/// Takes a sample of the fleet (the live `FleetStatus` reading) every interval and keeps an hour
/// of them in Redis for the console's charts, and one a minute for a week for its history. Every
/// replica runs one; the store keeps one sample per bucket whichever replica comes first, so the
/// charts are the same on every replica. The replica whose minute sample it was also records in
/// the ledger how the scheduler's passes stand (`SchedulerPasses.record`), so that a page counts
/// at most a minute of the fleet's Apple calls and events for a pass still settling.
public struct ConsoleSampler: NamedService {
    let lanes: LanePool<ConsoleDesk>
    let interval: Duration
    /// The process's: what the samples wait on between them.
    let clock: any FleetClock
    let logger: Logger

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await takeSample()
                try? await clock.sleep(for: interval)
            }
        }
    }

    /// One sample; a fleet that cannot be read leaves a gap in the charts, and a line in the log.
    func takeSample() async {
        let (interval, now) = (self.interval, clock.now())
        do {
            let newMinute = try await lanes.run { desk in
                let status = try desk.status.read(.live).status()
                let queue = status.queue
                let figures = ConsoleSample.Figures(
                    ready: queue.ready, reserved: queue.reserved, delayed: queue.delayedDue + queue.delayedLater,
                    dead: queue.dead, tokensGranted: status.rateLimit.tokensGranted, done: queue.jobsDone, retried: queue.jobsRetried,
                    died: queue.jobsDied, answers: status.appleStatusLastMinute)
                try desk.store.addSample(figures, interval: interval, keep: .seconds(3_600) + interval * 2)
                return try desk.store.addSample(figures, to: .minutes, interval: .seconds(60), keep: ConsoleStore.Series.minuteKept)
            }
            guard newMinute else { return }
        } catch {
            logger.warning("console: no sample of the fleet this time", metadata: ["error": "\(error)"])
            return
        }
        do {
            try await lanes.run { desk in try SchedulerPasses.record(ledger: desk.ledger, queue: desk.queue, now: now) }
        } catch {
            logger.warning("console: the scheduler's passes are not recorded this minute", metadata: ["error": "\(error)"])
        }
    }
}
