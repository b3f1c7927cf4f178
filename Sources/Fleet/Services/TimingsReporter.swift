import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Logging
import RedisClient
import ServiceLifecycle

/// Every 10 s, adds what this process timed since (its `FleetMetrics`' Apple calls per endpoint
/// and jobs' times from first enqueue to done) to the fleet's timings in Redis (`FleetTimings`),
/// under the minute and the hour of its clock: one round trip, however many calls and jobs it
/// timed, and none on the way of a call or a job. A timing lands in the minute it was reported in,
/// so at most 10 s late. As it stops it reports the rest. Runs in every process that calls Apple
/// or finishes jobs: a worker, `serve` (its registrations and its console's calls), `console`.
public struct TimingsReporter: ProcessDuty {
    static let interval = Duration.seconds(10)

    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        // The first step, at once, has nothing to tell yet but opens the connection the last report needs.
        await every(Self.interval, thread: "rf-timings", startingNow: true, open: { [settings] in
            FleetTimings(connection: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix))
        }, failing: "reporting the process's timings failed") { [metrics, clock] timings, _ in
            try Self.report(metrics, to: timings, at: clock.now())
        } last: { [metrics, clock, logger] timings in
            do {
                try Self.report(metrics, to: timings, at: clock.now())
            } catch {
                logger.warning("could not report the process's last timings", metadata: ["error": "\(error)"])
            }
        }
    }

    /// What a one-shot command timed (its calls to Apple), added to the fleet's timings as it ends:
    /// it runs no reporter. Not reported when Redis cannot be reached: the command did its work.
    public static func reportOnce(_ metrics: FleetMetrics, settings: FleetSettings, logger: Logger) {
        do {
            let timings = FleetTimings(connection: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix))
            try report(metrics, to: timings, at: settings.processClock().now())
        } catch {
            logger.warning("could not add the command's timings to the fleet's", metadata: ["error": "\(error)"])
        }
    }

    /// Adds the timings `metrics` holds to the fleet's at `now`; when Redis fails they stay for the next report.
    static func report(_ metrics: FleetMetrics, to timings: FleetTimings, at now: Date) throws(QueueError) {
        let untold = metrics.takeTimings()
        guard !untold.isEmpty else { return }
        do {
            try timings.add(untold, at: Int64(now.timeIntervalSince1970 * 1000))
        } catch {
            metrics.putBackTimings(untold)
            throw error
        }
    }
}
