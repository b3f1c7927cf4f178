import AppStore
import JobQueue
import Ledger

/// What becomes of one job.
enum Decision {
    /// Write this result; once it is durable, settle the job as `then`. `reanalyse` redoes the
    /// analysis on a newer stored state if another writer got there first.
    case write(VerificationWrite, reanalyse: ((SubscriptionState?) throws -> Analysis)?, then: Settlement)
    /// Nothing to write.
    case settle(Settlement)
}

/// What becomes of a job once its result (if any) is durable.
public enum Settlement: Sendable, CustomStringConvertible {
    /// Done with it: the job leaves the queue, counted as this outcome.
    case ack(FleetMetrics.JobOutcome)
    case postpone(Duration)
    case retry(JobFailure)
    case bury(JobFailure)

    public var description: String {
        switch self {
        case .ack(let outcome): "done: \(outcome.rawValue)"
        case .postpone(let delay): "postponed by \(delay)"
        case .retry(let failure): "failed, worth retrying: \(failure.errorClass): \(failure.message)"
        case .bury(let failure): "cannot be verified: \(failure.errorClass): \(failure.message)"
        }
    }
}
