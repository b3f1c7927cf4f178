import AppStore
import Fleet
import Foundation
import Lanes
import Ledger

extension NotificationRecovery {
    /// What a run tells as it goes, for `receiptfleet notifications recover` to print.
    public enum Event {
        /// It resumes after the last recorded run: from this moment, later than asked.
        case resumed(from: Date)
        /// Apple keeps `days` of `environment`'s history, less than asked for: reading from `from` on.
        case kept(days: Int, environment: AppStoreEnvironment, from: Date)
        /// A page of `app`'s history in `environment` was read: `pages` so far, holding `found`
        /// notifications; `tally` is the whole run's so far.
        case page(app: String, environment: AppStoreEnvironment, pages: Int, found: Int, tally: Tally)
        /// One app's history in one environment is read (or its reading failed).
        case read
        /// A notification in the history does not hold: it was refused.
        case refused(any Error)
        /// The audit trail could not record the run.
        case unrecorded(any Error)
    }

    /// A whole run: the history of `app` (nil: every app) in each of `environments`, from `start`
    /// (with `resume`, where the last recorded run that read as much ended, an hour before, when
    /// that is later) to `end`. A run that is not a dry one is recorded in the audit trail as
    /// `actor`'s (notifications.recover), where `status`, the console and `resume` read it.
    public func run(
        app: String?, environments: Set<AppStoreEnvironment>, from start: Date, until end: Date, onlyFailures: Bool,
        dryRun: Bool, resume: Bool, actor: String, report: (Event) -> Void
    ) async throws -> Tally {
        let lane = Lane(name: "recover") { [fleet] in try Connections(settings: fleet, consumer: "notifications-recover", enqueueOnly: true) }
        defer { lane.shutdown() }
        var start = start
        if resume, let resumed = try await lane.run({ try Self.resumePoint(in: $0.ledger, app: app, onlyFailures: onlyFailures) }),
           resumed > start {
            start = min(resumed, end.addingTimeInterval(-1))
            report(.resumed(from: start))
        }
        var tally = Tally()
        for app in app.map({ [$0] }) ?? fleet.apps.names {
            for environment in environments.sorted(by: { $0.rawValue < $1.rawValue }) {
                let kept = earliestStart(in: environment)
                if start < kept { report(.kept(days: Int(Self.keptDays(environment)), environment: environment, from: kept)) }
                defer { report(.read) }
                let found = tally.found
                try await recover(
                    app: app, environment: environment, from: max(start, kept), until: end, onlyFailures: onlyFailures, dryRun: dryRun,
                    lane: lane, into: &tally,
                    page: { pages, tally in
                        report(.page(app: app, environment: environment, pages: pages, found: tally.found - found, tally: tally))
                    },
                    refused: { report(.refused($0)) })
            }
        }
        if !dryRun {
            let details = ["since": start.formatted(.iso8601), "until": end.formatted(.iso8601), "found": "\(tally.found)",
                           "new": "\(tally.new)", "only_failures": "\(onlyFailures)"]
            let record = AuditRecord(
                actor: actor, via: .cli, action: "notifications.recover", target: app, details: details,
                outcome: tally.refused > 0 ? "failed: \(tally.refused) refused" : "ok")
            do {
                try await lane.run { try $0.ledger.record(record) }
            } catch {
                report(.unrecorded(error))
            }
        }
        return tally
    }
}
