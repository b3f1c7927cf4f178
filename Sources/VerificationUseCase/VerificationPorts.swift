import AppStore
import Foundation
import JobQueue
import Ledger

/// The fleet's leave to call Apple, and what the fleet must hear of Apple's answers. A worker's is
/// `PacedGate` (FleetGate in Redis, paced by time slots), an API lane's `LaneGate`; tests use a fake.
public protocol AppleGate {
    /// Waits until this caller may call `endpoint` once about a subject of `app` (nil: not known
    /// yet): `.granted` (call now), `.probe` (call, as the paused fleet's one probe), `.paused`,
    /// `.throttled`, `.halted` or `.appHalted` (do not call). `upcoming` counts this call and the
    /// caller's further ones that may be booked with it.
    func admit(upcoming: Int, to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission
    /// The admitted call to `endpoint` is about to leave: `.granted` when its time slot still
    /// holds; otherwise (the caller was preempted after it woke for its slot) the slot is given up,
    /// and the answer is `admit`'s for another, waited for.
    func departing(to endpoint: AppleEndpoint, forApp app: String?) throws -> Admission
    /// What the last call (to `endpoint`, about a subject of `app`) got and how long it took: told
    /// with the next admission.
    func called(_ answer: LastAnswer, by endpoint: AppleEndpoint, forApp app: String?, taking duration: Duration)
    /// The probe got an answer from Apple: the pause is over.
    func reportRecovered() throws
    /// Apple did not answer (`action` is `.retryable(upstreamUnavailable: true)` or
    /// `.unavailableUnlessPersistent`): counts toward the pause, or halts the fleet.
    func reportUnanswered(_ action: VerificationAction, _ exchange: VerificationExchange) throws -> RecurringFailureVerdict
    /// `endpoint` answered 429: nobody calls it for `wait`. Returns how long it is now spent.
    func reportThrottled(_ endpoint: AppleEndpoint, for wait: Duration) throws -> Duration
    /// One subscription's answer from `backend` was a configuration error; true once enough of
    /// `app`'s agree (verifyReceipt: that app is halted) or enough of any (the Server API is).
    func reportConfigurationError(
        subscriptionID: Int64, app: String, reason: String, needed: Int, backend: VerificationBackend
    ) throws -> Bool
    /// Stops the whole fleet (a Server API error: only the Server API) until an operator resumes it.
    func halt(reason: String, backend: VerificationBackend) throws
}

/// Asks Apple about a receipt or a transaction: `AppleClients`, or a fake.
public protocol AppleVerifier {
    /// `leave` is asked right before every call leaves, for its endpoint: for the first, whether
    /// the admitted call is still on time (`AppleGate.departing`); for each further one (the other
    /// environment, another page of history, another secret), for leave of its own from its
    /// endpoint's budget. Refused, the call is not made and the verification ends there (the
    /// first: `.notSent`). `app` decides the shared secret; nil for a receipt whose app is not
    /// known yet (a registration that names none).
    func verify(
        _ subject: VerificationSubject, ofApp app: String?, startingIn environment: AppStoreEnvironment,
        leave: (AppleEndpoint) -> Bool
    ) -> Verification
}

/// Where verification results go: the `Ledger`, or a fake.
public protocol VerificationStore {
    /// Writes many results in one transaction; one outcome each, in order. `purchases` are one-time
    /// purchases that belong to none of the results (a registered receipt's; a job's ride with its
    /// write, `VerificationWrite.purchases`): written first, and returned as stored.
    func write(
        _ writes: [VerificationWrite], purchases: PurchaseWrite?, nextNightlyRun: Date
    ) throws -> (outcomes: [WriteOutcome], purchases: RecordedPurchases?)
    /// Writes one result again after it lost the compare-and-set, analysing Apple's answer anew on
    /// top of what the other writer stored.
    func rewrite(
        _ write: VerificationWrite, nextNightlyRun: Date, reanalysing: (SubscriptionState?) throws -> Analysis
    ) throws -> WriteOutcome
    /// Settles the claims a queued registration's receipt was made with, once Apple judged it and
    /// what it wrote is durable. Returns the subscription's account afterwards.
    @discardableResult
    func judgeClaims(of subscriptionID: Int64, _ judgement: ClaimJudgement) throws -> String?
    /// Takes one of the calls a claim's receipt may cost, if no one took one since `seen`
    /// (`Ledger.takeClaimAttempt`): the attempt's number, or nil.
    func takeClaimAttempt(of subscriptionID: Int64, receiptSHA256: String, seen: Int, limit: Int) throws -> Int?
}

extension Ledger: VerificationStore {
    public func write(
        _ writes: [VerificationWrite], purchases: PurchaseWrite?, nextNightlyRun: Date
    ) throws -> (outcomes: [WriteOutcome], purchases: RecordedPurchases?) {
        // In a transaction of their own: they belong to no subscription, and recording them again is harmless.
        let recorded = try purchases.map(recordPurchases)
        return (try persist(writes, nextNightlyRun: nextNightlyRun), recorded)
    }

    public func rewrite(
        _ write: VerificationWrite, nextNightlyRun: Date, reanalysing: (SubscriptionState?) throws -> Analysis
    ) throws -> WriteOutcome {
        try persist(write, nextNightlyRun: nextNightlyRun, attempts: 3, reanalysing: reanalysing)
    }
}
