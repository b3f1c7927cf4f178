import Fleet
import Foundation
import Lanes
import Logging
import ServiceLifecycle

/// Answers customers' refund requests (CONSUMPTION_REQUEST notifications) before Apple's
/// deadline: every few seconds, one `ConsumptionResponder` pass on a thread of its own. Every
/// worker process with a Server API key runs one; a request is claimed by one process at a time.
public struct ConsumptionAnswering: ProcessDuty {
    public let context: ProcessContext
    /// Apple gives 12 hours: a few seconds' delay costs nothing, and the pass is one query when idle.
    static let interval: Duration = .seconds(5)

    public init(_ context: ProcessContext) {
        self.context = context
    }

    public func run() async {
        await every(
            Self.interval, thread: "rf-consumption", startingNow: true, grace: settings.appleTimeout * 2,
            open: { [settings, metrics, clock] in try ConsumptionResponder(settings: settings, metrics: metrics, clock: clock) },
            failing: "answering consumption requests failed"
        ) { [logger] responder, _ in
            let pass = try responder.answerDue()
            if !pass.isEmpty {
                logger.info("consumption requests", metadata: [
                    "answered": "\(pass.answered)", "unanswered": "\(pass.unanswered)", "missed": "\(pass.missed)",
                    "retried": "\(pass.retried)"])
            }
        }
    }
}
