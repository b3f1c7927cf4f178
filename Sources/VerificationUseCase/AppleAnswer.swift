import AppStore
import Foundation
import JobQueue
import Ledger

/// Apple's answer about one receipt, judged by the status policy (`SubscriptionVerification.ask`).
public struct Answer: Sendable {
    /// Every call made (two when Apple sent the receipt to the other environment) and the last
    /// readable response.
    public let verification: Verification
    public let verdict: Verdict
    /// The service that was asked.
    public let backend: VerificationBackend

    /// What the last call went wrong with, if anything (curl's error, an HTTP status): never a
    /// secret, a header or a body.
    public var problem: String? { verification.lastExchange.problem }

    /// The ledger's record of the last call, with what came of it.
    public func attempt(_ outcome: AttemptOutcome, at now: Date, runID: String, error: String? = nil) -> VerificationAttempt {
        let appleStatus: Int? = if case .status(let status, _) = verification.outcome { status } else { nil }
        let exchange = verification.lastExchange
        return VerificationAttempt(
            attemptedAt: now, outcome: outcome, environment: exchange.environment, appleStatus: appleStatus,
            httpStatus: exchange.httpStatus, latencyMilliseconds: Int(exchange.latency / .milliseconds(1)),
            error: error ?? exchange.problem, runID: runID, backend: backend)
    }
}

/// What Apple's answer means, once the fleet has heard what it must (a pause, a halt, a recovery).
public enum Verdict: Sendable {
    /// Apple read the receipt: analyse and store what it says.
    case verified(VerifyReceiptResponse)
    /// Apple did not answer. A positive `pause` is how long the fleet now pauses; zero is a stray
    /// failure among good answers.
    case unavailable(pause: Duration)
    /// Worth asking again later: a 5xx status, 21002 before its last chance, a refused redirect.
    case retry
    /// Apple will never accept this receipt, for `reason`.
    case rejected(reason: String)
    /// A configuration error (21004, 21000…) that only this receipt shows: perhaps another app's.
    case misconfigured(reason: String)
    /// The fleet is halted, by this answer or by others like it, until an operator resumes it.
    case halted(reason: String)
}

/// A registered receipt's verified answer could not be written (`SubscriptionVerification.record`).
public struct RecordingFailure: Error, CustomStringConvertible {
    public let failure: JobFailure
    public var description: String { "the verified answer could not be stored: \(failure.errorClass): \(failure.message)" }
}
