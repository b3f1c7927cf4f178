import AppStore
import Foundation
import PostgresClient

/// What one verifyReceipt attempt did, as logged in `verifications`. Never holds the receipt.
public struct VerificationAttempt: Sendable, Equatable {
    public var attemptedAt: Date
    public var outcome: AttemptOutcome
    /// The App Store environment that answered.
    public var environment: AppStoreEnvironment?
    /// The service that was asked.
    public var backend: VerificationBackend?
    /// Apple's `status`, when Apple answered with one.
    public var appleStatus: Int?
    public var httpStatus: Int?
    public var latencyMilliseconds: Int?
    /// What went wrong, for people. Never put a receipt or any other secret in it.
    public var error: String?
    /// The scheduler run that enqueued the job, if any.
    public var runID: String?

    public init(
        attemptedAt: Date, outcome: AttemptOutcome, environment: AppStoreEnvironment? = nil, appleStatus: Int? = nil,
        httpStatus: Int? = nil, latencyMilliseconds: Int? = nil, error: String? = nil, runID: String? = nil,
        backend: VerificationBackend? = nil
    ) {
        self.attemptedAt = attemptedAt
        self.outcome = outcome
        self.environment = environment
        self.appleStatus = appleStatus
        self.httpStatus = httpStatus
        self.latencyMilliseconds = latencyMilliseconds
        self.error = error
        self.runID = runID
        self.backend = backend
    }
}

/// How an attempt ended, as stored in `verifications.outcome` and `subscriptions.last_outcome`.
/// A string underneath, so rows written by newer binaries still read.
public struct AttemptOutcome: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple answered with a receipt, and it was analysed.
    public static let verified = AttemptOutcome(rawValue: "verified")
    /// The attempt failed in a way worth trying again; nothing about the subscription changed.
    public static let retryable = AttemptOutcome(rawValue: "retryable")
    /// The receipt failed for good; the subscription became invalid.
    public static let permanentFailure = AttemptOutcome(rawValue: "permanent_failure")

    public var description: String { rawValue }
}

/// One job's result, ready to be written by `Ledger.persist`.
public struct VerificationWrite: Sendable {
    public var subscriptionID: Int64
    public var attempt: VerificationAttempt
    /// The new state and what came with it; nil when the attempt changed nothing.
    public var change: Change?
    /// The one-time purchases on the same receipt, recorded in the same transaction when the
    /// change is written (a refund of a lifetime purchase found on a nightly check, say).
    public var purchases: PurchaseWrite?

    /// An analysis to store in place of the state it was made from.
    public struct Change: Sendable {
        public var analysis: Analysis
        /// The `version` of the row the analysed state was read from: the write happens only if
        /// the row still has it.
        public var expectedVersion: Int64
    }

    public init(subscriptionID: Int64, attempt: VerificationAttempt, change: Change?, purchases: PurchaseWrite? = nil) {
        self.subscriptionID = subscriptionID
        self.attempt = attempt
        self.change = change
        self.purchases = purchases
    }

    /// Stores `analysis`, made from `subscription.state`, and the receipt's `purchases` with it.
    public static func analysed(
        _ analysis: Analysis, of subscription: LoadedSubscription, attempt: VerificationAttempt,
        purchases: PurchaseWrite? = nil
    ) -> VerificationWrite {
        VerificationWrite(
            subscriptionID: subscription.id, attempt: attempt,
            change: Change(analysis: analysis, expectedVersion: subscription.version), purchases: purchases)
    }

    /// Records an attempt that changed nothing (a retryable failure): a `verifications` row and
    /// `last_outcome`, no new state, no new version.
    public static func unchanged(_ subscription: LoadedSubscription, attempt: VerificationAttempt) -> VerificationWrite {
        VerificationWrite(subscriptionID: subscription.id, attempt: attempt, change: nil)
    }

    /// Marks the subscription invalid after a permanent failure (`VerificationAction.permanent`),
    /// with a `verification_failed` event the first time (see `SubscriptionAnalyzer.permanentFailure`).
    /// - Parameter reason: the policy's reason; never a secret.
    public static func permanentFailure(
        of subscription: LoadedSubscription, reason: String, attempt: VerificationAttempt
    ) -> VerificationWrite {
        let analysis = SubscriptionAnalyzer.permanentFailure(
            stored: subscription.state, originalTransactionID: subscription.originalTransactionID, reason: reason,
            status: attempt.appleStatus, now: attempt.attemptedAt)
        return .analysed(analysis, of: subscription, attempt: attempt)
    }
}

/// What became of one write.
public enum WriteOutcome: Sendable {
    /// Written; the subscription's version is now `version` (unchanged for an attempt that changed nothing).
    case written(version: Int64)
    /// Another writer changed the subscription since it was read: nothing was written. Read it
    /// again, analyse again, and write again (`Ledger.persist(_:nextNightlyRun:reanalysing:)` does).
    case stale
    /// The subscription no longer exists: nothing was written.
    case missing
    /// The database rejected this write (a batch's other writes went ahead); the error says why.
    case failed(PostgresError)
}
