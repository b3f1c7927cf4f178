import ArgumentParser
import Fleet
import Lanes
import Observability

/// `receiptfleet relay`
struct Relay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish outbox events to the {rf}:events stream and deliver signed webhooks.",
        discussion: """
            Takes the events the workers wrote, in order per subscription, publishes them to the Redis \
            stream {rf}:events (downstream systems read it with their own consumer groups) and delivers \
            them to the registered webhook endpoints, retrying on a schedule. Woken by PostgreSQL \
            LISTEN/NOTIFY, polling as a fallback. Several relays may run at once. Serves /metrics, \
            /healthz and /readyz on --metrics-address. Stops on SIGTERM/SIGINT.

            Examples:
              receiptfleet relay
              receiptfleet relay --metrics-address 127.0.0.1:9470
              receiptfleet worker --with-relay      (the same, inside a worker process)
            """)

    @OptionGroup var options: FleetOptions

    func run() async throws {
        let logger = setUpLogging(level: options.logLevel)
        let settings = try options.settings()
        let metrics = ProcessMetrics()
        let server = try await MetricsServer.start(settings: settings, metrics: metrics, logger: logger)
        let relay = RelayRunner(settings: settings, metrics: metrics.fleet, logger: logger)
        relay.start()
        let signal = await TerminationSignals().wait()
        logger.info("stopping the relay", metadata: ["signal": "\(signal)"])
        _ = try await onNewThread(named: "rf-stop") { relay.stop(grace: .seconds(20)) }
        await server?.stop()
    }
}
