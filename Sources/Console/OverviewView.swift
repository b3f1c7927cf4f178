import AppStore
import Fleet
import Foundation
import JobQueue
import Ledger
import Operations

/// The overview page: the queue, Apple, the scheduler's passes; built from one `FleetStatus`
/// reading, the hour of samples and the nights of passes.
struct OverviewView {
    let chrome: Chrome
    var notice: String?
    var queue: FleetStatus.Queue
    var delayed: Int
    /// The oldest job's age since its first enqueue, to the second.
    var oldestAge: String
    var gate: Gate
    /// When `notifications recover` last brought in what serve missed, and what it found.
    var notificationRecovery: String
    var requestRate: String
    var rateLimit: String
    var verifiedLastMinute: Int
    var apps: [App]
    var answers: [Answer]
    var run: Run?
    /// The scheduler's latest nights, each with its passes (`SchedulerPasses.nights`).
    var nights: [NightRows] = []
    static let nightsListed = 7
    var windowTitle: String
    var windows: [WindowLink]
    var depthChart: Chart
    var jobsChart: Chart
    var rateChart: Chart
    var answersChart: Chart

    /// The fleet's gate: the Apple section's line, and the Pause or Resume the gate section offers.
    struct Gate {
        var text: String
        /// "halted" (red), "paused" (amber) or "open".
        var cssClass: String
        /// "halted" or "paused" while the fleet stops (the gate section offers Resume, not Pause); nil while it runs.
        var stopped: String?
        var serverAPIHalt: String?

        init(_ status: FleetStatus) {
            if let reason = status.queue.haltedReason {
                (text, cssClass, stopped) = ("Halted: \(reason)", "halted", "halted")
            } else if let until = status.queue.pausedUntil {
                text = "Paused until \(Shown.time(until)): Apple is unavailable; one probe per period finds out when it is back"
                (cssClass, stopped) = ("paused", "paused")
            } else {
                (text, cssClass, stopped) = ("Open: workers call Apple", "open", nil)
            }
            serverAPIHalt = status.serverAPI.haltedReason
        }
    }

    /// One row of the scheduler's table: a night's totals, or one of its passes.
    struct PassRow {
        /// `data-run`: the pass's run id, or the night.
        var id: String
        var name: String
        var started: String
        var due: String
        var jobs: String
        var verified: String
        var dead: String
        var deadClass: String
        var replayed: String
        var took: String
        var appleCalls: String
        var events: String

        init(id: String, name: String, _ figures: SchedulerPassFigures, now: Date) {
            (self.id, self.name) = (id, name)
            started = Shown.time(figures.startedAt)
            (due, jobs) = (Shown.count(figures.due), Shown.count(figures.enqueued))
            (verified, dead, replayed) = (Shown.count(figures.verified), Shown.count(figures.dead), Shown.count(figures.replayed))
            deadClass = figures.dead > 0 ? "problem" : ""
            took = if let finished = figures.finishedAt {
                figures.enqueued == 0 ? "nothing to do" : Shown.duration(finished.timeIntervalSince(figures.startedAt))
            } else if let toGo = figures.toGo {
                "\(Shown.count(toGo)) to go, \(Shown.duration(now.timeIntervalSince(figures.startedAt))) so far"
            } else if figures.enqueued == 0 {
                "nothing enqueued yet"
            } else {
                "not known: its tally in Redis is gone"
            }
            (appleCalls, events) = (Shown.count(figures.appleCalls), Shown.count(figures.events))
        }
    }

    /// A night's row, then its latest passes'.
    struct NightRows {
        var night: PassRow
        var passes: [PassRow]
        /// "and 40 earlier passes", when not all are listed.
        var earlier: String?

        /// Passes listed under a night: a night of `schedule --every` holds hundreds.
        static let passesListed = 12

        init(_ night: SchedulerNight, now: Date) {
            let count = night.passes.count
            self.night = PassRow(id: night.night, name: "\(night.night): \(count) pass\(count == 1 ? "" : "es")", night.totals, now: now)
            passes = night.passes.prefix(Self.passesListed).map { PassRow(id: $0.passID, name: "pass \($0.pass)", $0.figures, now: now) }
            earlier = count > Self.passesListed ? "and \(count - Self.passesListed) earlier passes" : nil
        }
    }

    /// One app's row: its halt (its shared secret refused) stops it alone.
    struct App {
        var name: String
        var state: String
        var stateClass: String
        var halted: Bool
        var verified: Int
        /// Notification-first or nightly, and why; "-" before a scheduler pass judged it.
        var schedule: String
        var scheduleClass: String
        /// How long after Apple signed a change the fleet knew it, 99th percentile, as of the last pass.
        var freshness: String
        var checks: String
    }

    struct Answer {
        var status: String
        var meaning: String
        var count: Int
    }

    /// The latest scheduler pass: its jobs verified, dead and still to go, apart, so deaths never read as done.
    struct Run {
        var passID: String
        var found: String
        var enqueued: Int
        var verified: String
        var dead: String
        var toGo: String
        /// Verified and dead together: how far the progress bar has come.
        var settled: Int
        var percent: Int
        /// "paused" (amber) once any job died, else "open".
        var stateClass: String
        var eta: String
    }

    /// `samples` are the last hour's, every few seconds (the request rate now); `minutes` one a
    /// minute over `window` (the charts).
    init(status: FleetStatus, samples: [ConsoleSample], minutes: [ConsoleSample], window: ChartWindow, now: Date,
         viewer: OpsConsole.Operator, notice: String?) {
        chrome = Chrome("Overview", tab: .overview, viewer: viewer)
        self.notice = notice
        queue = status.queue
        delayed = status.queue.delayedDue + status.queue.delayedLater
        oldestAge = status.queue.oldestJobAgeSeconds.map(Shown.duration) ?? "none waiting"
        gate = Gate(status)
        notificationRecovery = status.lastNotificationRecovery.map { run in
            "Last recovered \(Shown.time(run.at)): \(run.found) in Apple's history, \(run.new) new"
                + (run.outcome == "ok" ? "." : " (\(run.outcome)).")
        } ?? "No recovery from Apple's notification history is recorded (receiptfleet notifications recover)."

        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        requestRate = Self.rates(samples).last.map { Shown.number($0.value) } ?? "-"
        rateLimit = Shown.number(status.rateLimit.perSecond)
        verifiedLastMinute = status.verifiedLastMinute
        // An app is only as running as the fleet: while the fleet stops, its apps wait.
        apps = status.apps.map { [gate] app in
            let (state, stateClass) = if let reason = app.haltedReason {
                ("Halted: \(reason)", "halted")
            } else if let stopped = gate.stopped {
                ("Waiting: the fleet is \(stopped)", "paused")
            } else {
                ("Running", "open")
            }
            let (schedule, scheduleClass) = switch app.schedule {
            case let health? where health.notificationFirst: ("Notification-first: \(health.why)", "open")
            case let health?: ("Nightly: \(health.why)", "paused")
            case nil: ("-", "")
            }
            return App(name: app.name, state: state, stateClass: stateClass, halted: app.haltedReason != nil,
                       verified: app.verifiedLastMinute, schedule: schedule, scheduleClass: scheduleClass,
                       freshness: app.schedule?.freshnessP99Seconds.map(Shown.duration) ?? "-",
                       checks: app.schedule?.checksPerSubscription.map { String(format: "%.2f", $0) } ?? "-")
        }
        answers = status.appleStatusLastMinute.sorted { $0.key < $1.key }.map {
            Answer(status: $0.key, meaning: AppleStatusMeaning.of($0.key), count: $0.value)
        }
        windowTitle = window.title
        windows = window.links(to: "/console")
        let bucket = window.bucketMs
        let whole = { (value: Double) in Shown.count(Int(value.rounded())) }
        // Every window reads the minute samples the same way, so its points agree with the hour's:
        // a gauge at its peak in each bucket, a counter's rate averaged over it.
        depthChart = Chart(
            label: "jobs not yet done", lines: [("not yet done", "", History.peak(minutes, bucketMs: bucket) { Double($0.depth) })],
            now: nowMs, window: window, aggregate: .peak("of the minute samples"), bucketMs: bucket, format: whole)
        rateChart = Chart(
            label: "requests to Apple per second",
            lines: [("requests per second", "", History.perMinute(minutes, bucketMs: bucket, \.tokensGranted).map { ($0.at, $0.value / 60) })],
            now: nowMs, window: window, aggregate: .average("rate"), bucketMs: bucket, format: Shown.number)
        jobsChart = Chart(
            label: "jobs per minute: verified, retried, dead",
            lines: [("verified", "s-verified", History.perMinute(minutes, bucketMs: bucket, \.done)),
                    ("retried", "s-retried", History.perMinute(minutes, bucketMs: bucket, \.retried)),
                    ("dead", "s-dead", History.perMinute(minutes, bucketMs: bucket, \.died))],
            now: nowMs, window: window, aggregate: .average("per minute"), bucketMs: bucket, format: whole)
        var others = ["s-1", "s-2", "s-3"].makeIterator()
        answersChart = Chart(
            label: "Apple's answers per minute by status",
            lines: History.answers(minutes, bucketMs: bucket).map { status, points in
                let style = switch status {
                case "0": "s-verified"
                case "21005": "s-retried"
                case "none": "s-dead"
                default: others.next() ?? "s-3"
                }
                return ("\(status) (\(AppleStatusMeaning.of(status)))", style, points)
            },
            now: nowMs, window: window, aggregate: .average("per minute"), bucketMs: bucket, format: whole)

        if let last = status.lastSchedulerRun, let tally = status.lastRunTally, tally.enqueued > 0 {
            // At the last minute's pace; none while nothing was verified.
            let perSecond = Double(status.verifiedLastMinute) / 60
            let eta: String = if tally.toGo == 0 {
                tally.dead == 0 ? "Done." : "Done, with dead jobs: see Dead letters."
            } else if perSecond > 0 {
                "Ends around \(Shown.time(now + Double(tally.toGo) / perSecond)) at the last minute's pace."
            } else {
                "Nothing was verified in the last minute, so no end can be estimated."
            }
            let settled = tally.verified + tally.dead
            run = Run(passID: last.passID, found: Shown.count(last.found), enqueued: tally.enqueued,
                      verified: Shown.count(tally.verified), dead: Shown.count(tally.dead), toGo: Shown.count(tally.toGo),
                      settled: settled, percent: min(100, settled * 100 / tally.enqueued),
                      stateClass: tally.dead > 0 ? "paused" : "open", eta: eta)
        }
    }

    /// Apple's request rate between consecutive samples: the limiter's tokens granted per second.
    static func rates(_ samples: [ConsoleSample]) -> [(at: Int64, value: Double)] {
        zip(samples, samples.dropFirst()).compactMap { earlier, later in
            let seconds = Double(later.at - earlier.at) / 1000
            // A count that fell means Redis lost it: no rate for that step.
            let (before, after) = (earlier.figures.tokensGranted, later.figures.tokensGranted)
            guard seconds > 0, after >= before else { return nil }
            return (later.at, Double(after - before) / seconds)
        }
    }
}
