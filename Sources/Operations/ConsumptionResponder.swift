import AppStore
import AppStoreClients
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Ledger

/// What one pass of the responder did.
public struct ConsumptionPass: Sendable, Equatable {
    public var answered = 0
    public var unanswered = 0
    public var missed = 0
    public var retried = 0

    public init() {}

    public var isEmpty: Bool { self == ConsumptionPass() }
}

/// Answers the CONSUMPTION_REQUEST notifications the intake recorded (Send Consumption
/// Information), before Apple's 12 hours are up: what the ledger knows is computed
/// (`ConsumptionAnswer.decide`), nothing is sent without the account's consent or for a Family
/// Sharing transaction, and each call has the gate's leave for the endpoint's own budget. A request
/// whose deadline passed is recorded as missed, never sent. Blocks its thread: make one where it is used.
public final class ConsumptionResponder {
    /// A claimed request is another process's to skip for this long; one left unanswered comes back after it.
    static let lease: Duration = .seconds(60)
    /// How soon before its deadline a pending request counts as near it (the fleet-wide gauge
    /// `receiptfleet_consumption_requests_nearing_deadline`, which the alert watches).
    public static let nearingDeadline: Duration = .seconds(2 * 3_600)
    /// How long after an answer that did not come the request is tried again, when Apple did not say.
    static let retryAfter: Duration = .seconds(30)

    private let connections: Connections
    private let settings: FleetSettings
    private let metrics: FleetMetrics
    private let clock: any FleetClock
    /// Each answer's way to Apple: a second at most for the endpoint's slot, since a refused
    /// answer is simply tried again later, well before the deadline.
    private let door: AppleDoor

    public init(settings: FleetSettings, metrics: FleetMetrics, clock: any FleetClock) throws {
        connections = try Connections(settings: settings, consumer: "consumption", enqueueOnly: true, clock: clock)
        (self.settings, self.metrics, self.clock) = (settings, metrics, clock)
        door = AppleDoor(gate: connections.gate, settings: settings, metrics: metrics, clock: clock, patience: .seconds(1))
    }

    /// Marks the requests whose deadline passed as missed, then answers every one due now,
    /// soonest deadline first.
    public func answerDue() throws -> ConsumptionPass {
        let now = clock.now()
        let ledger = connections.ledger
        var pass = ConsumptionPass()
        pass.missed = try ledger.markMissedConsumptionRequests(now: now)
        while case let due = try ledger.claimDueConsumptionRequests(now: now, limit: 50, lease: Self.lease), !due.isEmpty {
            for request in due {
                switch try answer(request) {
                case .answered: pass.answered += 1
                case .unanswered: pass.unanswered += 1
                case .retried: pass.retried += 1
                case .missed: pass.missed += 1
                }
            }
        }
        for (outcome, count) in [(ConsumptionOutcome.answered, pass.answered), (.unanswered, pass.unanswered), (.missed, pass.missed),
                                 (.retried, pass.retried)] {
            metrics.consumptionRequests(outcome, count: count)
        }
        return pass
    }

    private func answer(_ request: DueConsumptionRequest) throws -> ConsumptionOutcome {
        let ledger = connections.ledger
        let preference = settings.apps.app(named: request.app)?.refundPreference
        let answer: ConsumptionAnswer
        switch ConsumptionAnswer.decide(request.facts, preference: preference) {
        case .failure(let withheld):
            try ledger.recordConsumptionUnanswered(id: request.id, reason: withheld.rawValue)
            return .unanswered
        case .success(let decided): answer = decided
        }
        do {
            let client = try connections.apple.serverAPIClient(forApp: request.app)
            try door.call(.consumptionInformation, forApp: request.app) {
                try client.sendConsumptionInformation(transactionID: request.transactionID, answer, in: request.environment)
            }
        } catch let closed as AppleDoorClosed {
            try ledger.recordConsumptionRetry(id: request.id, error: closed.description, retryAt: clock.after(closed.wait.withJitter()))
            return .retried
        } catch let error as ServerAPICallError {
            if let code = error.code, let why = ConsumptionInformation.refusals[code] {
                try ledger.recordConsumptionUnanswered(id: request.id, reason: "Apple refused: \(why) (\(code))")
                return .unanswered
            }
            try ledger.recordConsumptionRetry(id: request.id, error: error.description, retryAt: clock.after(Self.retryAfter))
            return .retried
        }
        try ledger.recordConsumptionAnswered(id: request.id, body: answer.body, at: clock.now())
        return .answered
    }
}
