import AppStore
import Foundation

/// The passes `receiptfleet schedule` asks for, from its flags: one nightly pass, or one every
/// interval (`periodic`); the options of each, and what a pass says.
public struct SchedulePlan: Sendable {
    public let runID: String?
    public let periodic: Bool
    public let dryRun: Bool
    public let limit: Int?
    public let environment: AppStoreEnvironment?

    public init(runID: String?, periodic: Bool, dryRun: Bool, limit: Int?, environment: AppStoreEnvironment?) {
        (self.runID, self.periodic, self.dryRun, self.limit, self.environment) = (runID, periodic, dryRun, limit, environment)
    }

    /// The options of the pass that starts at `now`; its run id, unless one is named, is the
    /// day's for a nightly pass and the minute's for a periodic one.
    public func options(at now: Date) -> Scheduler.Options {
        var options = Scheduler.Options(
            runID: runID ?? (periodic ? String(Instant(now).description.prefix(16)) : Scheduler.nightlyRunID(now)))
        options.dryRun = dryRun
        options.limit = limit
        options.environment = environment
        return options
    }

    /// What a finished pass says.
    public func report(_ summary: ScheduleSummary) -> String {
        (dryRun ? "Dry run " : "Run ") + "\(summary.runID): found \(summary.found) due, enqueued \(summary.enqueued), "
            + "already queued \(summary.alreadyQueued), in \(String(format: "%.2f", summary.seconds)) s."
            + (summary.notificationsRecovered == 0 ? "" : "\n"
                + (dryRun ? "\(summary.notificationsRecovered) notifications await a verification" : "Enqueued again the jobs of "
                    + "\(summary.notificationsRecovered) notifications") + " that their subscriptions have not had since they arrived.")
    }

    /// A pass in progress, in one line.
    public static func progress(_ summary: ScheduleSummary) -> String {
        "run \(summary.runID): \(summary.found) due, \(summary.enqueued) enqueued, "
            + "\(summary.alreadyQueued) already queued, \(String(format: "%.1f", summary.seconds)) s"
    }
}
