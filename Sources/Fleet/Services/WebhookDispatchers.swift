import EventRelay
import Lanes
import Logging
import PostgresClient
import ServiceLifecycle

/// Delivers events to the registered webhook endpoints (`WebhookDispatcher`), `webhook-threads`
/// threads each with its own connection. Webhook requests wait on receivers, so each gets a
/// thread: a slow receiver holds at most its endpoint's cap of them, and the rest go on
/// delivering to the others.
public struct WebhookDispatchers: ProcessDuty {
    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        let webhooks = settings.webhookConfiguration
        if webhooks.secretKeys == nil {
            logger.warning("no webhook-secret-key is configured: deliveries to endpoints with encrypted secrets fail")
        }
        await ThreadService("rf-webhooks", threads: settings.webhookThreads, grace: .seconds(20), logger: logger) {
            [settings, metrics, logger, clock] _, stop in
            keepRunning("webhook dispatcher", stop, clock, logger) {
                let dispatcher = try WebhookDispatcher(
                    database: PostgresConnection(configuration: settings.postgresConfiguration()), configuration: webhooks)
                dispatcher.run(
                    until: stop, onError: { logger.error("webhook round failed", metadata: ["error": "\($0)"]) },
                    onAttempt: metrics.attempted)
            }
        }.run()
    }
}
