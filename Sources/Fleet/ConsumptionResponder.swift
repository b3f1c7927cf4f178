import AppStore
import AppStoreClients
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

    public init(settings: FleetSettings, metrics: FleetMetrics) throws {
        connections = try Connections(settings: settings, consumer: "consumption", enqueueOnly: true)
        (self.settings, self.metrics) = (settings, metrics)
    }

    /// Marks the requests whose deadline passed as missed, then answers every one due at `now`,
    /// soonest deadline first.
    public func answerDue(now: Date = Date()) throws -> ConsumptionPass {
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
        if let wait = try leave(forApp: request.app) {
            try ledger.recordConsumptionRetry(id: request.id, error: wait.why, retryAt: Date().addingTimeInterval(wait.seconds))
            return .retried
        }
        do {
            let client = try connections.apple.serverAPIClient(forApp: request.app)
            try client.sendConsumptionInformation(transactionID: request.transactionID, answer, in: request.environment)
        } catch let error as ServerAPICallError {
            if let code = error.code, let why = ConsumptionInformation.refusals[code] {
                try ledger.recordConsumptionUnanswered(id: request.id, reason: "Apple refused: \(why) (\(code))")
                return .unanswered
            }
            var wait = Self.retryAfter
            if let retryAfter = error.retryAfter {
                wait = try connections.reportThrottled(.consumptionInformation, for: retryAfter, settings: settings)
            }
            try ledger.recordConsumptionRetry(id: request.id, error: error.description, retryAt: Date().addingTimeInterval(wait.seconds))
            return .retried
        }
        try ledger.recordConsumptionAnswered(id: request.id, body: answer.body, at: Date())
        return .answered
    }

    /// Waits for the gate's slot for Send Consumption Information, through its own budget; when
    /// the gate says not now (paused, throttled, halted, every slot booked), how long until asking
    /// again and why.
    private func leave(forApp app: String) throws -> (seconds: Double, why: String)? {
        switch try connections.admit(.consumptionInformation, forApp: app, within: .seconds(1), settings: settings) {
        case .granted(let slots):
            Thread.sleep(forTimeInterval: slots.first?.seconds ?? 0)
            return nil
        case .wait(let wait): return (wait.seconds, "every slot of the endpoint's budget is booked")
        case .paused(let wait): return (wait.seconds, "the fleet is paused: Apple is unavailable")
        case .throttled(let wait): return (wait.seconds, "Apple's rate limit for the endpoint (429)")
        case .probe: return (1, "the fleet is finding out whether Apple is back")
        case .halted(let reason), .appHalted(let reason): return (Self.retryAfter.seconds, "halted: \(reason)")
        }
    }
}
