import EventRelay
import Lanes
import Logging
import PostgresClient
import RedisClient

/// The outbox relay and the webhook dispatchers (`webhookThreads` of them), each on a thread of
/// its own with its own connections: `receiptfleet relay`, or `receiptfleet worker --with-relay`.
/// Several may run at once; the relay publishes each event once and in per-subscription order.
public final class RelayRunner: Sendable {
    private let settings: FleetSettings
    private let metrics: FleetMetrics
    private let logger: Logger
    private let threads = ThreadGroup()

    public init(settings: FleetSettings, metrics: FleetMetrics = FleetMetrics(), logger: Logger) {
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
    }

    public func start() {
        threads.spawn("rf-relay") { [settings, metrics, logger] stop in
            keepRunning("outbox relay", stop, logger) {
                let relay = try OutboxRelay(
                    database: PostgresConnection(configuration: settings.relayPostgresConfiguration()),
                    redis: RedisConnection(settings.redisConfiguration()),
                    configuration: RelayConfiguration(keyPrefix: settings.keyPrefix, retention: settings.eventsStreamRetention))
                relay.run(
                    until: stop, onError: { logger.error("relay round failed", metadata: ["error": "\($0)"]) },
                    onPublished: metrics.published)
            }
        }
        // Webhook requests wait on receivers, so each gets a thread: a slow receiver holds at most
        // its endpoint's cap of them, and the rest go on delivering to the others.
        let webhooks = settings.webhookConfiguration
        if webhooks.secretKeys == nil {
            logger.warning("no webhook-secret-key is configured: deliveries to endpoints with encrypted secrets fail")
        }
        for index in 0..<settings.webhookThreads {
            threads.spawn("rf-webhooks-\(index)") { [settings, metrics, logger] stop in
                keepRunning("webhook dispatcher", stop, logger) {
                    let dispatcher = try WebhookDispatcher(
                        database: PostgresConnection(configuration: settings.postgresConfiguration()),
                        configuration: webhooks)
                    dispatcher.run(
                        until: stop, onError: { logger.error("webhook round failed", metadata: ["error": "\($0)"]) },
                        onAttempt: metrics.attempted)
                }
            }
        }
        logger.info("relay started")
    }

    /// Stops every loop after its current round; returns whether they ended within `grace`.
    @discardableResult
    public func stop(grace: Duration) -> Bool {
        threads.stop(grace: grace)
    }
}

/// Runs `body` until `stop` is set, starting it again (after 2 s) when it cannot connect.
private func keepRunning(_ what: String, _ stop: StopSignal, _ logger: Logger, _ body: () throws -> Void) {
    while !stop.isSet {
        do {
            try body()
        } catch {
            logger.error("\(what) cannot start; retrying in 2 s", metadata: ["error": "\(error)"])
            stop.sleep(.seconds(2))
        }
    }
}
