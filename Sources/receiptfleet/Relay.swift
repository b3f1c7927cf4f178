import ArgumentParser
import ProcessRoot

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
        let (logger, _, settings) = try options.setUp()
        try await ProcessRoot.run(.relay, settings: settings, logger: logger)
    }
}
