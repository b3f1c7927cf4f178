import JobQueue
import Lanes
import Logging
import ServiceLifecycle

/// Moves due delayed jobs (retries, postponements, scheduled checks) into the ready streams every
/// half second. Every worker process runs one; the move is one atomic script, safe in many at once.
public struct Promoter: ProcessDuty {
    /// How often it looks: a retry or a postponement comes due at most this late.
    static let interval: Duration = .milliseconds(500)
    /// The most jobs one step moves; a full batch is followed by another at once.
    static let batch = 500

    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await periodically("rf-promoter", every: Self.interval, startingNow: true, failing: "promoting due jobs failed") {
            queue, stop in
            // A full batch means more may be due: go again at once.
            while !stop.isSet, try queue.promoteDue(batch: Self.batch) == Self.batch {}
        }
    }
}
