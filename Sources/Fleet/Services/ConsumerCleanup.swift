import JobQueue
import Lanes
import Logging
import RedisClient
import ServiceLifecycle

/// Every 5 minutes, forgets the consumers that hold no jobs and were idle for an hour: those of
/// processes that exited without deregistering (SIGKILL). Safe when every process runs it at once.
public struct ConsumerCleanup: ProcessDuty {
    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await ThreadService("rf-cleanup", grace: settings.redisTimeout * 2, logger: logger) { _, stop in
            var queue: JobQueue?
            while stop.sleep(.seconds(300)) {
                do {
                    let current = try queue ?? JobQueue(
                        connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                        consumer: JobQueue.consumerName(thread: -1))
                    queue = current
                    _ = try current.removeIdleConsumers(idleLongerThan: .seconds(3_600))
                } catch {
                    logger.error("forgetting idle consumers failed; trying again later", metadata: ["error": "\(error)"])
                }
            }
        }.run()
    }
}
