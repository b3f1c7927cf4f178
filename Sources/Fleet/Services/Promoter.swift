import JobQueue
import Lanes
import Logging
import RedisClient
import ServiceLifecycle

/// Moves due delayed jobs (retries, postponements, scheduled checks) into the ready streams every
/// half second. Every worker process runs one; the move is one atomic script, safe in many at once.
public struct Promoter: ProcessDuty {
    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await ThreadService("rf-promoter", grace: settings.redisTimeout * 2, logger: logger) { _, stop in
            var queue: JobQueue?
            repeat {
                do {
                    let current = try queue ?? JobQueue(
                        connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                        consumer: JobQueue.consumerName(thread: -1))
                    queue = current
                    // A full batch means more may be due: go again at once.
                    while !stop.isSet, try current.promoteDue(batch: 500) == 500 {}
                } catch {
                    logger.error("promoting due jobs failed; retrying", metadata: ["error": "\(error)"])
                }
            } while stop.sleep(.milliseconds(500))
        }.run()
    }
}
