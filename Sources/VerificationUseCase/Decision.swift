import AppStore
import JobQueue
import Ledger

/// What becomes of one job.
public enum Decision {
    /// Write this result; once it is durable, settle the job as `then`. `reanalyse` redoes the
    /// analysis on a newer stored state if another writer got there first.
    case write(VerificationWrite, reanalyse: ((SubscriptionState?) throws -> Analysis)?, then: Settlement)
    /// Nothing to write.
    case settle(Settlement)
    /// Apple judged a receipt a registration of subscription `of` brought (`LoadedSubscription.claim`):
    /// `decision` as above, then, once its write is durable, the claims made with it are settled.
    indirect case judging(ClaimJudgement, of: Int64, Decision)

    /// The decision about the job and the subscription, whatever it settles of a claim.
    var verdict: Decision {
        if case .judging(_, _, let decision) = self { decision.verdict } else { self }
    }
}

/// What becomes of a job once its result (if any) is durable.
public enum Settlement: Sendable, CustomStringConvertible {
    /// Done with it: the job leaves the queue, counted as this outcome.
    case ack(JobOutcome)
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

/// How a job left a worker's hands (the `outcome` label of `receiptfleet_jobs_processed_total`).
public enum JobOutcome: String, Sendable, CaseIterable {
    /// Apple's answer was analysed and written.
    case verified
    /// A queued registration's receipt did not show the subscription: its claim is refused, and
    /// the subscription is as it was.
    case refuted
    /// The receipt failed for good; the subscription is now invalid.
    case permanentFailure = "permanent_failure"
    /// Back to the delayed set for another attempt.
    case retried
    /// Moved to later without an attempt charged (the fleet paused or halted, or this worker stopping).
    case postponed
    /// To the dead letters.
    case dead
    /// Nothing to do: the subscription is gone or was verified since the job was enqueued.
    case skipped
}
