import AppStore
import Fleet
import FleetConfiguration
import Foundation
import Logging
import X509

/// Takes V2 notifications that did not come over HTTP (Apple's notification history, read by
/// `receiptfleet notifications recover`) through the reader and the intake `POST
/// /v1/notifications/apple` uses: verified, recorded once by their notificationUUID, applied and
/// queued exactly as if Apple had delivered them.
public struct NotificationReplay: Sendable {
    private let reader: NotificationReader
    private let intake: NotificationIntake

    /// `trustedRoots` and `acceptedEnvironments` are `serve`'s (`apple-root-certificate`,
    /// `notification-environments`): a recovered notification is judged as a delivered one.
    public init(
        fleet: FleetSettings, trustedRoots: [Certificate], acceptedEnvironments: Set<AppStoreEnvironment>, metrics: FleetMetrics,
        logger: Logger
    ) {
        reader = NotificationReader(fleet: fleet, verifier: SignedPayloadVerifier(trustedRoots: trustedRoots))
        intake = NotificationIntake(acceptedEnvironments: acceptedEnvironments, fleet: fleet, metrics: metrics, logger: logger)
    }

    /// A notification from the history, verified: its dedupe key (`v2:` + notificationUUID) and
    /// what it is about. Throws why it is not Apple's, or not readable.
    public func read(signedPayload: String, now: Date) async throws -> Recovered {
        // A JWS is base64url text in three parts: nothing in it can change the JSON it is put in.
        guard !signedPayload.isEmpty, signedPayload.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw NotificationReplayError(description: "the signed payload is not a JWS")
        }
        let body = Data(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
        do {
            return Recovered(notification: try await reader.read(body, now: now))
        } catch {
            switch error {
            case .malformed(let reason), .unauthenticated(_, let reason), .unconfigured(_, let reason):
                throw NotificationReplayError(description: reason)
            }
        }
    }

    /// On a thread of its own with `connections`: stores the notification once and queues its
    /// subscription's check, as `serve` does. Returns what became of it: `queued`, `stored` (Redis
    /// could not take the job; the scheduler will), `duplicate` (the ledger had it), or why nothing
    /// is to be done (`no_subscription`, `unknown_subscription`, `ignored_environment`).
    public func take(_ recovered: Recovered, connections: Connections) throws -> String {
        try intake.take(recovered.notification, connections: connections, recovered: true).status
    }

    /// A verified notification, waiting to be taken.
    public struct Recovered: Sendable {
        fileprivate let notification: AppleNotification
        /// `v2:` + notificationUUID: how the ledger knows it.
        public var dedupeKey: String { notification.dedupeKey }
        public var type: String { notification.type }
        public var app: String { notification.app }
    }
}

/// Why a recovered notification was not taken; never holds the payload.
public struct NotificationReplayError: Error, CustomStringConvertible {
    public let description: String
}
