import Lanes
import Foundation
import JobQueue
import Logging
import RedisClient

/// The background duties of a worker process, on a thread of their own: moving due delayed jobs
/// into the ready streams, and forgetting consumers that left long ago. Safe when every process
/// of the fleet runs it at once (each step is one atomic script or command).
final class Maintenance {
    private let settings: FleetSettings
    private let stop: StopSignal
    private let logger: Logger

    init(settings: FleetSettings, stop: StopSignal, logger: Logger) {
        self.settings = settings
        self.stop = stop
        self.logger = logger
    }

    func run() {
        var queue: JobQueue?
        var lastCleanup = ContinuousClock.now
        while !stop.isSet {
            do {
                let current = try queue ?? JobQueue(
                    connection: RedisConnection(settings.redisConfiguration()),
                    keys: QueueKeys(prefix: settings.keyPrefix),
                    consumer: JobQueue.consumerName(thread: -1))
                queue = current
                // A full batch means more may be due: go again at once.
                while !stop.isSet, try current.promoteDue(batch: 500) == 500 {}
                if lastCleanup.duration(to: .now) >= .seconds(300) {
                    lastCleanup = .now
                    _ = try current.removeIdleConsumers(idleLongerThan: .seconds(3_600))
                }
            } catch {
                logger.error("maintenance step failed; retrying", metadata: ["error": "\(error)"])
            }
            stop.sleep(.milliseconds(500))
        }
    }
}
