import AppStore
import ArgumentParser
import Fleet
import Foundation
import Lanes
import Observability
import Terminal

/// `receiptfleet schedule`
struct Schedule: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enqueue one verification job per due subscription.",
        discussion: """
            Reads the subscriptions whose next check has come (refunded and invalid ones wait for a \
            notification) in pages, and enqueues them under one run id, skipping every subscription \
            whose job is still queued (waiting, running or to be retried) from any run: a second run \
            adds nothing for them, however far behind the workers are. A lock keeps two schedulers \
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

    @Option(help: "The run id (default: today's UTC date; with --every, the date and time of each pass).")
    var runID: String?

    @Flag(help: "Count what is due; enqueue nothing.")
    var dryRun = false

    @Option(help: "Enqueue at most this many subscriptions.")
    var limit: Int?

    @Option(help: "Only subscriptions of this environment: Production or Sandbox.")
    var environment: String?

    @Option(help: "Keep running: a pass every this many seconds.")
    var every: Int?

    func validate() throws {
        if let environment, AppStoreEnvironment(rawValue: environment) == nil {
            throw ValidationError("--environment must be Production or Sandbox, not '\(environment)'.")
        }
        if let every, every < 1 { throw ValidationError("--every must be at least 1 second.") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1.") }
    }

    func run() async throws {
        let logger = setUpLogging(level: options.logLevel)
        let settings = try options.settings()
        let metrics = ProcessMetrics()
        // A one-shot run ends before anyone could scrape it; with --every the scheduler is a service,
        // which stops between passes on SIGTERM or SIGINT.
        let server = every == nil ? nil : try await MetricsServer.start(settings: settings, metrics: metrics, logger: logger)
        let signals = every == nil ? nil : TerminationSignals()
        // The scheduler's connections block: they live on a lane, off Swift's cooperative pool.
        let scheduler = Lane(name: "rf-scheduler") { try Scheduler(settings: settings, metrics: metrics.fleet) }
        defer { scheduler.shutdown() }  // nothing is queued by then: the thread ends at once
        repeat {
            let now = Date()
            var passOptions = Scheduler.Options(
                runID: runID ?? (every == nil ? Scheduler.nightlyRunID(now) : String(Instant(now).description.prefix(16))))
            passOptions.dryRun = dryRun
            passOptions.limit = limit
            passOptions.environment = environment.flatMap(AppStoreEnvironment.init(rawValue:))
            let pass = passOptions
            let summary = try await scheduler.run { scheduler in
                let progress = ProgressLine()
                defer { progress.finish() }
                return try scheduler.run(pass, now: now) { summary in
                    progress.show("run \(summary.runID): \(summary.found) due, \(summary.enqueued) enqueued, "
                        + "\(summary.alreadyQueued) already queued, \(String(format: "%.1f", summary.seconds)) s")
                }
            }
            print((dryRun ? "Dry run " : "Run ") + "\(summary.runID): found \(summary.found) due, enqueued \(summary.enqueued), "
                + "already queued \(summary.alreadyQueued), in \(String(format: "%.2f", summary.seconds)) s.")
            if summary.notificationsRecovered > 0 {
                print((dryRun ? "\(summary.notificationsRecovered) notifications await a verification" : "Enqueued again the jobs of "
                    + "\(summary.notificationsRecovered) notifications") + " that their subscriptions have not had since they arrived.")
            }
            logger.debug("scheduler pass done", metadata: ["run": "\(summary.runID)"])
            if let every, let signals {
                let next = ContinuousClock.now + .seconds(every)
                while signals.received == nil, ContinuousClock.now < next { try await Task.sleep(for: .milliseconds(100)) }
            }
        } while every != nil && signals?.received == nil
        if let signal = signals?.received { logger.info("stopping the scheduler", metadata: ["signal": "\(signal)"]) }
        await server?.stop()
    }
}
