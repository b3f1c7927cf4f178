import AppStore
import FleetConfiguration
import JobQueue

extension Connections {
    /// Tells the fleet's gate about a call Apple did not answer (`action` is
    /// `.retryable(upstreamUnavailable: true)` or `.unavailableUnlessPersistent`): both count toward
    /// the pause; the second halts the fleet once every call has failed so for
    /// `haltAfterTransportFailures`, with an alarm naming curl's error and the host (the exchange's
    /// problem: never the URL's path or query, a header or the body).
    public func reportUnanswered(
        _ action: VerificationAction, _ exchange: VerificationExchange, settings: FleetSettings
    ) throws(QueueError) -> RecurringFailureVerdict {
        guard case .unavailableUnlessPersistent(let reason) = action else { return .counted(pause: try gate.reportUnavailable()) }
        let haltAfter = settings.haltAfterTransportFailures
        return try gate.reportRecurringFailure(
            reason: "for \(haltAfter.components.seconds) s, \(reason): \(exchange.problem ?? "\(exchange.outcome)")",
            haltAfter: haltAfter)
    }
}
