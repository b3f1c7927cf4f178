import AppStore
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import VerificationUseCase

/// An API lane's leave to call Apple. A person is waiting, so a call is booked only so far ahead:
/// a registration's first call up to the API's `apple-wait` (`book`: the caller waits for its slot
/// off the lane, asynchronously, before it takes one), the use case's further call (the redirect to
/// the other environment, `admit`) at most a second ahead, since a lane is held while it waits.
/// Beyond that the call is not made and the client tries again.
public final class LaneGate: AppleGate {
    static let redirectHorizon = Duration.seconds(1)

    private let connections: Connections
    private let settings: FleetSettings

    public init(connections: Connections, settings: FleetSettings) {
        self.connections = connections
        self.settings = settings
    }

    /// Books one call to `endpoint` within `horizon`, without waiting for its slot.
    public func book(_ endpoint: AppleEndpoint, forApp app: String?, within horizon: Duration) throws -> Admission {
        try connections.gate.admit(endpoint, forApp: app, within: horizon, settings: settings)
    }

    public func admit(upcoming: Int, to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission {
        let admission = try book(endpoint, forApp: app, within: Self.redirectHorizon)
        if case .granted(let slots) = admission { connections.clock.sleep(slots[0]) }
        return admission
    }

    /// A lane's call leaves once its caller waited for the slot and took the lane: it is not paced again.
    public func departing(to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission { .granted(slots: [.zero]) }

    /// A lane makes no batches, so there is no next call to tell.
    public func called(_ answer: LastAnswer, by endpoint: AppleEndpoint, forApp app: String?, taking duration: Duration) {}

    public func reportRecovered() throws { try connections.gate.reportRecovered() }

    public func reportUnanswered(_ action: VerificationAction, _ exchange: VerificationExchange) throws -> RecurringFailureVerdict {
        try connections.reportUnanswered(action, exchange, settings: settings)
    }

    public func reportThrottled(_ endpoint: AppleEndpoint, for wait: Duration) throws -> Duration {
        try connections.gate.reportThrottled(endpoint, for: wait, settings: settings)
    }

    public func reportConfigurationError(
        subscriptionID: Int64, app: String, reason: String, needed: Int, backend: VerificationBackend
    ) throws -> Bool {
        try connections.gate.reportConfigurationError(
            subscriptionID: subscriptionID, app: app, reason: reason, needed: needed, backend: backend, settings: settings)
    }

    public func halt(reason: String, backend: VerificationBackend) throws {
        try connections.gate.halt(reason: reason, group: settings.haltGroup(for: backend))
    }
}
