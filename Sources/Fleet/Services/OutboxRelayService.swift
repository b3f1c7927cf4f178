import EventRelay
import Lanes
import Logging
import PostgresClient
import RedisClient
import ServiceLifecycle

/// Publishes the outbox to the `{rf}:events` stream, in order per subscription, woken by
/// PostgreSQL's LISTEN/NOTIFY (`OutboxRelay`): `receiptfleet relay`, or `worker --with-relay`.
/// Several may run at once; each event is published once.
public struct OutboxRelayService: ProcessDuty {
    public let context: ProcessContext

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await ThreadService("rf-relay", grace: .seconds(20), logger: logger) { [settings, metrics, logger, clock] _, stop in
            keepRunning("outbox relay", stop, clock, logger) {
                let relay = try OutboxRelay(
                    database: PostgresConnection(configuration: settings.relayPostgresConfiguration()),
                    redis: RedisConnection(settings.redisConfiguration()),
                    configuration: RelayConfiguration(keyPrefix: settings.keyPrefix, retention: settings.eventsStreamRetention))
                relay.run(
                    until: stop, onError: { logger.error("relay round failed", metadata: ["error": "\($0)"]) },
                    onPublished: metrics.published)
            }
        }.run()
    }
}

/// How long a loop that cannot connect waits before it tries again: soon enough that a server
/// back from a restart is used within seconds, rarely enough not to flood the log.
let reconnectPause: Duration = .seconds(2)

/// Runs `body` until `stop` is set, starting it again (after `reconnectPause` of `clock`) when it cannot connect.
func keepRunning(_ what: String, _ stop: StopSignal, _ clock: any FleetClock, _ logger: Logger, _ body: () throws -> Void) {
    while !stop.isSet {
        do {
            try body()
        } catch {
            logger.error("\(what) cannot start; retrying in \(reconnectPause)", metadata: ["error": "\(error)"])
            clock.sleep(reconnectPause, unless: stop)
        }
    }
}
