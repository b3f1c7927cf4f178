import AppStore
import Foundation

/// The passes `receiptfleet schedule` asks for, from its flags (one, or one every interval): the
/// options of each, and what a pass says.
public struct SchedulePlan: Sendable {
    /// The run an operator named, whose night every pass counts in; nil: each pass's UTC date.
    public let night: String?
    public let dryRun: Bool
    public let limit: Int?
    public let environment: AppStoreEnvironment?

    public init(night: String?, dryRun: Bool, limit: Int?, environment: AppStoreEnvironment?) {
        (self.night, self.dryRun, self.limit, self.environment) = (night, dryRun, limit, environment)
    }

    /// The options of the pass that starts at `now`: its night, unless one is named, is the day's
    /// (a periodic pass's too: the day's passes are one night's).
    public func options(at now: Date) -> Scheduler.Options {
        var options = Scheduler.Options(night: night ?? Scheduler.night(of: now))
        options.dryRun = dryRun
        options.limit = limit
        options.environment = environment
        return options
    }

    /// What a finished pass says.
    public func report(_ summary: ScheduleSummary) -> String {
        (dryRun ? "Dry run of pass " : "Pass ") + "\(summary.passID): found \(summary.found) due, enqueued \(summary.enqueued), "
            + "already queued \(summary.alreadyQueued), in \(String(format: "%.2f", summary.seconds)) s."
            + (summary.notificationsRecovered == 0 ? "" : "\n"
                + (dryRun ? "\(summary.notificationsRecovered) notifications await a verification" : "Enqueued again the jobs of "
                    + "\(summary.notificationsRecovered) notifications") + " that their subscriptions have not had since they arrived.")
    }

    /// A pass in progress, in one line.
    public static func progress(_ summary: ScheduleSummary) -> String {
        "pass \(summary.passID): \(summary.found) due, \(summary.enqueued) enqueued, "
            + "\(summary.alreadyQueued) already queued, \(String(format: "%.1f", summary.seconds)) s"
    }
}
