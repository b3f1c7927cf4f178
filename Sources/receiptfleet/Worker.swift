import ArgumentParser
import Fleet
import Lanes
import ProcessRoot
import Operations

/// `receiptfleet worker`
struct Worker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify queued subscriptions with Apple until stopped.",
        discussion: """
            Runs --concurrency worker threads, each with its own Redis, PostgreSQL and HTTP connections: \
            reserve a batch of jobs, verify each subscription under the fleet-wide rate limit, pause and \
            halt, write the results in one transaction, then acknowledge the jobs. Delayed jobs are \
            promoted in the background. Scale out by starting more processes anywhere that reaches \
            Redis and PostgreSQL. Serves /metrics, /healthz and /readyz on --metrics-address \
            (127.0.0.1:9464 unless set; one port per process on a host).

            SIGTERM or SIGINT: stop reserving, finish the jobs in hand within --drain-grace seconds, \
            acknowledge them, deregister, exit 0. Jobs still running at the deadline are left for other \
            workers to reclaim.

            Examples:
              receiptfleet worker --concurrency 32
              receiptfleet worker --metrics-address 0.0.0.0:9464 --with-relay
              RECEIPTFLEET_SHARED_SECRET=… receiptfleet worker --config /etc/receiptfleet.json
            """)

    @OptionGroup var options: FleetOptions

    @Flag(help: "Also run the outbox relay and webhook deliveries in this process.")
    var withRelay = false

    func run() async throws {
        let (logger, _, settings) = try options.setUp()
        if let warning = settings.visibilityTimeoutWarning { logger.warning("\(warning)") }
        for warning in try await onNewThread(named: "rf-check", { try ConfigurationReview.redisDurabilityWarnings(settings) }) {
            logger.warning("\(warning)")
        }
        try await ProcessRoot.run(.worker(withRelay: withRelay), settings: settings, logger: logger)
    }
}
