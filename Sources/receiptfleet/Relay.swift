import ArgumentParser
import Fleet

/// `receiptfleet relay`
struct Relay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish outbox events to the {rf}:events stream and deliver signed webhooks.",
        discussion: """
            Takes the events the workers wrote, in order per subscription, publishes them to the Redis \
            stream {rf}:events (downstream systems read it with their own consumer groups) and delivers \
            them to the registered webhook endpoints, retrying on a schedule. Woken by PostgreSQL \
            LISTEN/NOTIFY, polling as a fallback. Several relays may run at once. Stops on SIGTERM/SIGINT.

            Examples:
              receiptfleet relay
              receiptfleet worker --with-relay      (the same, inside a worker process)
            """)

    @OptionGroup var options: FleetOptions

    func run() throws {
        let logger = setUpLogging(level: options.logLevel)
        let relay = RelayRunner(settings: try options.settings(), logger: logger)
        relay.start()
        let signal = TerminationSignals().wait()
        logger.info("stopping the relay", metadata: ["signal": "\(signal)"])
        relay.stop(grace: .seconds(20))
    }
}
