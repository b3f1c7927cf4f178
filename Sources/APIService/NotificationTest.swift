import AppStore
import Fleet
import FleetConfiguration
import Foundation
import Lanes

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
    /// Reads the notification's signed payload as serve reads a delivered one.
    let replay: NotificationReplay

    public init(fleet: FleetSettings, replay: NotificationReplay) {
        (self.fleet, self.replay) = (fleet, replay)
    }

    /// Tests `app`'s server URL (nil: the only app's) in `environment`, waiting up to `wait`
    /// seconds for Apple's first attempt. Each call to Apple waits for its endpoint's budget as an
    /// operator's does.
    public func run(app: String?, environment: AppStoreEnvironment, wait: Int, report: (Event) -> Void) async throws -> Outcome {
        let lane = Lane(name: "test") { [fleet] in try Connections(settings: fleet, consumer: "notifications-test", enqueueOnly: true) }
        defer { lane.shutdown() }
        let token = try await lane.run { [fleet] connections in
            let client = try connections.apple.serverAPIClient(forApp: app)
            return try Self.door(connections, fleet).call(.testNotification, forApp: app) { try client.requestTestNotification(in: environment) }
        }
        report(.requested(token: token))
        let askStatus = {
            try await lane.run { [fleet] connections in
                let client = try connections.apple.serverAPIClient(forApp: app)
                return try Self.door(connections, fleet).call(.testNotificationStatus, forApp: app) {
                    try client.testNotificationStatus(token, in: environment)
                }
            }
        }
        var status = try await askStatus()
        for waited in 1...wait where status.attempts.isEmpty {
            report(.waiting(seconds: waited))
            try await SystemClock().sleep(for: .seconds(1))
            status = try await askStatus()
        }
        report(.waited)
        let recovered = try await replay.read(signedPayload: status.signedPayload)
        let recorded = try await lane.run { try $0.ledger.knowsNotification(dedupeKey: recovered.dedupeKey) }
        return Outcome(attempts: status.attempts, neverDelivered: status.neverDelivered, dedupeKey: recovered.dedupeKey, recorded: recorded)
    }

    /// The door an operator's calls to Apple go through: each waits for its endpoint's budget.
    private static func door(_ connections: Connections, _ fleet: FleetSettings) -> AppleDoor {
        AppleDoor(gate: connections.gate, settings: fleet, metrics: FleetMetrics(), clock: SystemClock(), patience: AppleDoor.operatorPatience)
    }
}
