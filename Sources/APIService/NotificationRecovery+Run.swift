import AppStore
import Fleet
import Foundation
import Lanes
import Ledger

extension NotificationRecovery {
    /// What a run tells as it goes, in `receiptfleet notifications recover`'s words.
    public enum Event {
        /// Where it reads from, when not from where it was asked to: after the last recorded run,
        /// or from as far back as Apple keeps.
        case note(String)
        /// How far it has read one app's history in one environment.
        case progress(String)
        /// One app's history in one environment is read (or its reading failed).
        case read
        /// What went wrong without stopping the run: a notification refused, the run unrecorded.
        case problem(String)
    }

    /// A whole run: the history of `app` (nil: every app) in each of the environments, from `start`
    /// (with `resume`, where the last recorded run that read as much ended, an hour before, when
    /// that is later) to `end`. A run that is not a dry one is recorded in the audit trail as
    /// `actor`'s (notifications.recover), where `status`, the console and `resume` read it.
    public func run(
        app: String?, from start: Date, until end: Date, onlyFailures: Bool,
        dryRun: Bool, resume: Bool, actor: String, report: (Event) -> Void
    ) async throws -> Tally {
        let lane = Lane(name: "recover") { [fleet] in try Connections(settings: fleet, consumer: "notifications-recover", enqueueOnly: true) }
        defer { lane.shutdown() }
        defer { TimingsReporter.reportOnce(metrics, settings: fleet, logger: logger) }
        var start = start
        if resume, let resumed = try await lane.run({ try Self.resumePoint(in: $0.ledger, app: app, onlyFailures: onlyFailures) }),
           resumed > start {
            start = min(resumed, end.addingTimeInterval(-1))
            report(.note("recover: resuming after the last run: from \(start.formatted(.iso8601))"))
        }
        var tally = Tally()
        for app in app.map({ [$0] }) ?? fleet.apps.names {
            for environment in environments.sorted(by: { $0.rawValue < $1.rawValue }) {
                let kept = earliestStart(in: environment)
                if start < kept {
                    report(.note("recover: Apple keeps \(Int(Self.keptDays(environment))) days of \(environment.rawValue) history: "
                                 + "from \(kept.formatted(.iso8601)) on"))
                }
                defer { report(.read) }
                let found = tally.found
                try await recover(
                    app: app, environment: environment, from: max(start, kept), until: end, onlyFailures: onlyFailures, dryRun: dryRun,
                    lane: lane, into: &tally,
                    page: { pages, tally in
                        report(.progress("recover: \(app), \(environment.rawValue): \(pages) page\(pages == 1 ? "" : "s"), "
                                         + "\(tally.found - found) notifications, \(tally.new) new in all"))
                    },
                    refused: { report(.problem("recover: a notification in Apple's history was refused: \($0)")) })
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
                report(.problem("warning: the audit trail did not record notifications.recover: \(error)"))
            }
        }
        return tally
    }
}
