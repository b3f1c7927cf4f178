import JobQueue
import Lanes
import Logging
import ServiceLifecycle

/// Every 5 minutes, forgets the consumers that hold no jobs and were idle for an hour: those of
/// processes that exited without deregistering (SIGKILL). Safe when every process runs it at once.
public struct ConsumerCleanup: ProcessDuty {
    /// How often it looks: rarely, since a leftover consumer costs only its entry in the group.
    static let interval: Duration = .seconds(300)
    /// How long a consumer that holds nothing must have been idle to be its dead process's: far
    /// longer than any live worker goes without reserving, even through a long pause.
    static let idleLimit: Duration = .seconds(3_600)

    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await periodically("rf-cleanup", every: Self.interval, startingNow: false, failing: "forgetting idle consumers failed") {
            queue, _ in
            _ = try queue.removeIdleConsumers(idleLongerThan: Self.idleLimit)
        }
    }
}
