import Foundation
import Lanes
import Logging

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
        await ThreadService("rf-consumption", grace: settings.appleTimeout * 2, logger: logger) { [settings, metrics, logger, clock] _, stop in
            var responder: ConsumptionResponder?
            var pause = Duration.zero
            while clock.sleep(pause, unless: stop) {
                pause = Self.interval
                do {
                    let current = try responder ?? ConsumptionResponder(settings: settings, metrics: metrics, clock: clock)
                    responder = current
                    let pass = try current.answerDue()
                    if !pass.isEmpty {
                        logger.info("consumption requests", metadata: [
                            "answered": "\(pass.answered)", "unanswered": "\(pass.unanswered)", "missed": "\(pass.missed)",
                            "retried": "\(pass.retried)"])
                    }
                } catch {
                    logger.error("answering consumption requests failed; trying again", metadata: ["error": "\(error)"])
                }
            }
        }.run()
    }
}
