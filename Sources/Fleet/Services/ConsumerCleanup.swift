import JobQueue
import Lanes
import Logging
import ServiceLifecycle

/// Every 5 minutes, forgets the consumers that hold no jobs and were idle for an hour: those of
/// processes that exited without deregistering (SIGKILL). Safe when every process runs it at once.
public struct ConsumerCleanup: ProcessDuty {
    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await periodically("rf-cleanup", every: .seconds(300), startingNow: false, failing: "forgetting idle consumers failed") {
            queue, _ in
            _ = try queue.removeIdleConsumers(idleLongerThan: .seconds(3_600))
        }
    }
}
