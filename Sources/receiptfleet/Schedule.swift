import AppStore
import ArgumentParser
import Fleet
import FleetFlags
import JobQueue
import Lanes
import Observability
import ProcessRoot
import Terminal

/// `receiptfleet schedule`
struct Schedule: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enqueue one verification job per due subscription.",
        discussion: """
            Reads the subscriptions whose next check has come (refunded and invalid ones wait for a \
            notification) in pages, and enqueues them under the pass's own run id, the night's and \
            its number (2026-11-28/2), skipping every subscription whose job is still queued \
            (waiting, running or to be retried) from any pass: a second pass adds nothing for them, \
            however far behind the workers are. The ops console shows each pass and its night. A lock keeps two schedulers \
            from overlapping. It also enqueues again the job of every App Store notification of the \
            last 3 days whose subscription has not been verified since: after a Redis loss, running \
            it loses no notification.
            Run it nightly from cron, a systemd timer or a Kubernetes CronJob; or keep it running with \
            --every, so that a renewal is seen minutes after it happens; then it serves /metrics, \
            /healthz and /readyz on --metrics-address, and SIGTERM or SIGINT stops it after the pass in hand.

            Examples:
              receiptfleet schedule
              receiptfleet schedule --dry-run
              receiptfleet schedule --environment Sandbox --limit 1000
              receiptfleet schedule --every 300 --metrics-address 127.0.0.1:9467
            """)

    @OptionGroup var options: FleetOptions

    @Option(help: "The night the passes count in, each as RUN-ID/N (default: the UTC date each pass starts).")
    var runID: String?

    @Flag(help: "Count what is due; enqueue nothing.")
    var dryRun = false

    @Option(help: "Enqueue at most this many subscriptions.")
    var limit: Int?

    @Option(help: "Only subscriptions of this environment: Production or Sandbox.")
    var environment: AppStoreEnvironment?

    @Option(help: "Keep running: a pass every this many seconds.")
    var every: Int?

    func validate() throws {
        if let every, every < 1 { throw ValidationError("--every must be at least 1 second.") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1.") }
        if let runID, !SchedulerPassID.isValid(night: runID) {
            throw ValidationError("--run-id must be 1 to \(SchedulerPassID.longestNight) bytes without '|' or '/'.")
        }
    }

    func run() async throws {
        let (logger, _, settings) = try options.setUp()
        let metrics = ProcessMetrics()
        let plan = plan
        guard let every else {
            // One pass: its connections block, so it runs on a thread of its own, off Swift's cooperative pool.
            let summary = try await onNewThread(named: "rf-scheduler") {
                let progress = ProgressLine()
                defer { progress.finish() }
                let now = settings.processClock().now()
                return try Scheduler(settings: settings, metrics: metrics.fleet).run(plan.options(at: now), now: now) {
                    progress.show(SchedulePlan.progress($0))
                }
            }
            log(plan.report(summary))
            return
        }
        // A service: a pass every interval until SIGTERM or SIGINT, with its metrics served.
        let loop = SchedulerLoop(
            ProcessContext(settings: settings, metrics: metrics.fleet, logger: logger), plan: plan, every: .seconds(every), say: log)
        try await ProcessRoot.run(.scheduler(loop), settings: settings, metrics: metrics, logger: logger)
    }

    /// The passes the flags ask for.
    private var plan: SchedulePlan {
        SchedulePlan(night: runID, dryRun: dryRun, limit: limit,
                     environment: environment)
    }
}
