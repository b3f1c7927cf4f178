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
    /// Each pass's options, and what a finished one says.
    let plan: SchedulePlan
    /// Hears what each finished pass says; a pass's progress (after every page) is logged at debug.
    let say: @Sendable (String) -> Void

    public init(_ context: ProcessContext, plan: SchedulePlan, every: Duration, say: @escaping @Sendable (String) -> Void) {
        (self.context, self.plan, self.every, self.say) = (context, plan, every, say)
    }

    public func run() async {
        await every(
            every, thread: "rf-scheduler", startingNow: true, grace: .seconds(30),
            open: { [settings, metrics] in try Scheduler(settings: settings, metrics: metrics) },
            failing: "scheduler pass failed (its connections are made again for the next)"
        ) { [clock, plan, say, logger] scheduler, _ in
            let now = clock.now()
            say(plan.report(try scheduler.run(plan.options(at: now), now: now) { logger.debug("\(SchedulePlan.progress($0))") }))
        }
    }
}
