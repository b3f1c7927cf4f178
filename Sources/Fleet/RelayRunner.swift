import EventRelay
import Foundation
import Lanes
import Logging
import PostgresClient
import RedisClient
import Synchronization

/// The outbox relay and the webhook dispatcher, each on a thread of its own with its own
/// connections: `receiptfleet relay`, or `receiptfleet worker --with-relay`. Several may run at
/// once; the relay publishes each event once and in per-subscription order.
public final class RelayRunner: Sendable {
    private let settings: FleetSettings
    private let logger: Logger
    private let stop = StopSignal()
    private let running = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    public init(settings: FleetSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    public func start() {
        running.store(2, ordering: .relaxed)
        spawn("rf-relay") { [settings, stop, logger] in
            keepRunning("outbox relay", stop, logger) {
                let relay = try OutboxRelay(
                    database: PostgresConnection(configuration: PostgresConfiguration(settings.postgresURL)),
                    redis: RedisConnection(RedisConfiguration(url: settings.redisURL)),
                    configuration: RelayConfiguration(keyPrefix: settings.keyPrefix))
                relay.run(until: stop) { logger.error("relay round failed", metadata: ["error": "\($0)"]) }
            }
        }
        spawn("rf-webhooks") { [settings, stop, logger] in
            keepRunning("webhook dispatcher", stop, logger) {
                let dispatcher = try WebhookDispatcher(
                    database: PostgresConnection(configuration: PostgresConfiguration(settings.postgresURL)))
                dispatcher.run(until: stop) { logger.error("webhook round failed", metadata: ["error": "\($0)"]) }
            }
        }
        logger.info("relay started")
    }

    /// Stops both loops after their current round; returns whether they ended within `grace`.
    @discardableResult
    public func stop(grace: Duration) -> Bool {
        stop.set()
        let deadline = DispatchTime.now() + grace.seconds
        while running.load(ordering: .acquiring) > 0 {
            if finished.wait(timeout: deadline) == .timedOut { return false }
        }
        return true
    }

    private func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        Thread { [self] in
            body()
            running.subtract(1, ordering: .releasing)
            finished.signal()
        }.start()
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
