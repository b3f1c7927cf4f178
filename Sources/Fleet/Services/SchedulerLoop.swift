import Foundation
import Lanes
import Logging
import ServiceLifecycle

/// `receiptfleet schedule --every`: a scheduler pass every interval, so that a renewal is seen
/// minutes after it happens. Graceful shutdown stops it between passes (a pass in hand finishes,
/// within the grace, or is left: the fleet lock expires by itself).
public struct SchedulerLoop: ProcessDuty {
    public let context: ProcessContext
    let every: Duration
    /// The options of the pass starting at a moment.
    let options: @Sendable (Date) -> Scheduler.Options
    /// Hears each pass's progress (after every page) and its end.
    let report: @Sendable (_ summary: ScheduleSummary, _ finished: Bool) -> Void

    public init(
        _ context: ProcessContext, every: Duration, options: @escaping @Sendable (Date) -> Scheduler.Options,
        report: @escaping @Sendable (_ summary: ScheduleSummary, _ finished: Bool) -> Void
    ) {
        (self.context, self.every, self.options, self.report) = (context, every, options, report)
    }

    public func run() async {
        await every(
            every, thread: "rf-scheduler", startingNow: true, grace: .seconds(30),
            open: { [settings, metrics] in try Scheduler(settings: settings, metrics: metrics) },
            failing: "scheduler pass failed (its connections are made again for the next)"
        ) { [clock, options, report] scheduler, _ in
            let now = clock.now()
            report(try scheduler.run(options(now), now: now) { report($0, false) }, true)
        }
    }
}
