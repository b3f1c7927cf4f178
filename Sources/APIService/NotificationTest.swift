import AppStore
import Fleet
import FleetConfiguration
import Foundation
import Lanes
import Logging

/// `receiptfleet notifications test`, the setup check after pointing Apple at a new URL: Apple is
/// asked for a TEST notification to the server URL App Store Connect names for one environment
/// (Request a Test Notification), its attempts are read (Get Test Notification Status), and the
/// notification is looked up in the ledger by its notificationUUID.
public struct NotificationTest: Sendable {
    /// What became of the test notification.
    public struct Outcome: Sendable {
        /// Apple's attempts to send it, as it lists them.
        public let attempts: [String]
        /// Apple has not delivered it: it could not, or (without attempts) has not tried yet.
        public let neverDelivered: Bool
        /// How the ledger knows it: `v2:` + notificationUUID.
        public let dedupeKey: String
        /// Whether this deployment's serve recorded it.
        public let recorded: Bool
        /// How long the test would wait for Apple's first attempt, in seconds.
        public let wait: Int

        /// Whether the notification reached this deployment's serve.
        public var reached: Bool { !neverDelivered && recorded }

        /// What the test found, and, when it failed, what to check.
        public var verdict: String {
            switch (neverDelivered, recorded) {
            case (false, true):
                "This deployment's serve recorded it (\(dedupeKey)): notifications reach it."
            case (false, false):
                "Apple's server URL answered 200, but this deployment's serve has not recorded it: the URL in App Store "
                    + "Connect points at another server (or another deployment's database)."
            case (true, _) where attempts.isEmpty:
                "Apple has not tried to send it within \(wait) s; run the test again with a longer --wait."
            case (true, _):
                "Apple could not deliver it: check that App Store Connect's server URL is serve's "
                    + "/v1/notifications/apple, reachable from the internet over TLS, and that serve is running."
            }
        }
    }

    /// What a test tells as it goes.
    public enum Event {
        /// Apple is sending the notification it knows by this token.
        case requested(token: String)
        /// Apple has not tried yet after this many seconds.
        case waiting(seconds: Int)
        /// Apple tried, or the wait is over.
        case waited
    }

    let fleet: FleetSettings
    let clock: any FleetClock
    /// Its calls to Apple, counted and timed; they join the fleet's timings as a test ends.
    let metrics = FleetMetrics()
    let logger: Logger
    /// Reads the notification's signed payload as serve reads a delivered one, from either environment.
    let replay: NotificationReplay

    /// Trusts the roots `configuration` names, as serve does.
    public init(fleet: FleetSettings, configuration: ResolvedConfiguration, logger: Logger) throws {
        replay = NotificationReplay(
            fleet: fleet, trustedRoots: try configuration.trustedRoots(), acceptedEnvironments: [.production, .sandbox],
            metrics: metrics, logger: logger)
        self.fleet = fleet
        self.logger = logger
        clock = fleet.processClock()
    }

    /// Tests `app`'s server URL (nil: the only app's) in `environment`, waiting up to `wait`
    /// seconds for Apple's first attempt. Each call to Apple waits for its endpoint's budget as an
    /// operator's does.
    public func run(app: String?, environment: AppStoreEnvironment, wait: Int, report: (Event) -> Void) async throws -> Outcome {
        let lane = Lane(name: "test") { [fleet] in try Connections(settings: fleet, consumer: "notifications-test", enqueueOnly: true) }
        defer { lane.shutdown() }
        defer { TimingsReporter.reportOnce(metrics, settings: fleet, logger: logger) }
        let token = try await lane.run { [fleet, metrics] connections in
            let client = try connections.apple.serverAPIClient(forApp: app)
            return try Self.door(connections, fleet, metrics).call(.testNotification, forApp: app) { try client.requestTestNotification(in: environment) }
        }
        report(.requested(token: token))
        let askStatus = {
            try await lane.run { [fleet, metrics] connections in
                let client = try connections.apple.serverAPIClient(forApp: app)
                return try Self.door(connections, fleet, metrics).call(.testNotificationStatus, forApp: app) {
                    try client.testNotificationStatus(token, in: environment)
                }
            }
        }
        var status = try await askStatus()
        for waited in 1...wait where status.attempts.isEmpty {
            report(.waiting(seconds: waited))
            try await clock.sleep(for: .seconds(1))
            status = try await askStatus()
        }
        report(.waited)
        let recovered = try await replay.read(signedPayload: status.signedPayload, now: clock.now())
        let recorded = try await lane.run { try $0.ledger.knowsNotification(dedupeKey: recovered.dedupeKey) }
        return Outcome(
            attempts: status.attempts, neverDelivered: status.neverDelivered, dedupeKey: recovered.dedupeKey, recorded: recorded, wait: wait)
    }

    /// The door an operator's calls to Apple go through: each waits for its endpoint's budget.
    private static func door(_ connections: Connections, _ fleet: FleetSettings, _ metrics: FleetMetrics) -> AppleDoor {
        AppleDoor(gate: connections.gate, settings: fleet, metrics: metrics, clock: connections.clock, patience: AppleDoor.operatorPatience)
    }
}
