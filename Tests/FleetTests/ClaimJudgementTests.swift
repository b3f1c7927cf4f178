import AppStore
import Foundation
@testable import Ledger
import Testing
@testable import VerificationUseCase

/// A registration queued while Apple could not be asked brings a receipt anyone could have sent:
/// the use case has Apple judge it alone, before the subscription's own receipt, and only a
/// receipt that shows the subscription changes anything (issue 23, part 1).
@Suite struct ClaimJudgementTests {
    typealias Table = DecisionTableTests
    static let claimed = ReceiptData(base64: "Y2xhaW1lZA==")

    /// The table's subscription with a queued claim waiting.
    static func claiming(attempts: Int = 0, waiting: Int = 1, receipt: ReceiptData? = Table.subscription.receipt) -> LoadedSubscription {
        var subscription = Table.subscription
        subscription.receipt = receipt
        subscription.claim = QueuedClaim(receipt: claimed, attempts: attempts, waiting: waiting)
        return subscription
    }

    @Test func aClaimsReceiptThatShowsTheSubscriptionIsWrittenAndProvesTheClaim() throws {
        let verifier = Table.FakeVerifier(.status(0, isRetryable: nil), response: try Table.activeResponse())
        let (settlement, _, store) = try Table.run(verifier, subscription: Self.claiming())
        #expect(settlement == "ack verified")
        let asked = verifier.subjects.map { subject -> ReceiptData? in if case .receipt(let receipt) = subject { receipt } else { nil } }
        #expect(asked == [Self.claimed], "the claim's receipt is asked about, not the stored one")
        #expect(store.written.map(\.attempt.outcome) == [.verified])
        #expect(store.judgements == [.proven(Self.claimed)])
    }

    /// Junk, or a receipt that is another subscription's: the claim is refused; the subscription
    /// keeps its receipt and state, and no attempt is written against it.
    @Test func aClaimsReceiptAppleRefusesIsRefutedAndChangesNothing() throws {
        let junk = try Table.run(Table.FakeVerifier(.status(21010, isRetryable: nil)), subscription: Self.claiming())
        #expect(junk.settlement == "ack refuted")
        #expect(junk.store.written.isEmpty)
        #expect(junk.store.judgements.map(Self.kind) == ["refuted"])

        let elsewhere = try Table.activeResponse(originalTransactionID: "1000000000000099")
        let other = try Table.run(Table.FakeVerifier(.status(0, isRetryable: nil), response: elsewhere), subscription: Self.claiming())
        #expect(other.settlement == "ack refuted")
        #expect(other.store.written.isEmpty)
    }

    /// Another app's receipt answers 21004: one client's configuration error, never a halt.
    @Test func aClaimsConfigurationErrorHaltsNothing() throws {
        let gate = Table.FakeGate()
        gate.confirmsConfigurationError = true
        let (settlement, _, store) = try Table.run(
            Table.FakeVerifier(.status(21004, isRetryable: nil)), gate: gate, subscription: Self.claiming())
        #expect(settlement == "ack refuted")
        #expect(!gate.heard.contains { $0.hasPrefix("configuration error") || $0.hasPrefix("halt") })
        #expect(store.judgements.map(Self.kind) == ["refuted"])
    }

    /// 21002 is retried as for any receipt, counted on the claim, not on the job, so that a
    /// stranger's junk cannot use up the attempts of the owner's registration.
    @Test func aClaimAppleCannotReadYetIsTriedAgainThenRefuted() throws {
        let first = try Table.run(Table.FakeVerifier(.status(21002, isRetryable: nil)), subscription: Self.claiming())
        #expect(first.settlement == "postpone")
        #expect(first.store.claimAttemptsTaken == 1, "the call is counted on the claim before it is made")
        #expect(first.store.judgements.isEmpty)

        let store = Table.FakeStore()
        let attempts = StatusPolicy().malformedReceiptAttempts
        store.claimAttemptsTaken = attempts - 1
        let last = try Table.run(
            Table.FakeVerifier(.status(21002, isRetryable: nil)), store: store, subscription: Self.claiming(attempts: attempts - 1))
        #expect(last.settlement == "ack refuted")
    }

    /// A job that reaches a claim another job took a call for since it was loaded asks Apple
    /// nothing: it comes back for the next claim, or leaves when none is left with a call to take.
    /// So a junk claim costs its three calls however many jobs and workers name it.
    @Test func aClaimAnotherJobIsJudgingCostsNoMore() throws {
        let verifier = Table.FakeVerifier(.status(21002, isRetryable: nil))
        let busy = Table.FakeStore()
        busy.claimAttemptsTaken = 1
        let raced = try Table.run(verifier, store: busy, subscription: Self.claiming(attempts: 0, waiting: 2))
        #expect(raced.settlement == "postpone")
        #expect(busy.claimAttemptsTaken == 1)

        let spent = Table.FakeStore()
        let attempts = StatusPolicy().malformedReceiptAttempts
        spent.claimAttemptsTaken = attempts
        let late = try Table.run(verifier, store: spent, subscription: Self.claiming(attempts: attempts, waiting: 2))
        #expect(late.settlement == "ack skipped")
        #expect(verifier.subjects.isEmpty, "Apple is not asked")
    }

    /// A call Apple did not answer judges nothing: its attempt is given back to the claim.
    @Test func aClaimsCallAppleDidNotAnswerIsGivenBack() throws {
        let gate = Table.FakeGate()
        gate.unanswered = .counted(pause: .seconds(2))
        let outage = try Table.run(Table.FakeVerifier(.unreadableBody(httpStatus: 503)), gate: gate, subscription: Self.claiming())
        #expect(outage.settlement == "postpone")
        #expect(outage.store.judgements.map(Self.kind) == ["given back"])
        #expect(outage.store.claimAttemptsTaken == 0)
    }

    /// With other claims waiting, the job comes back at once for the next, whatever this one was.
    @Test func theJobComesBackForTheNextClaim() throws {
        let refuted = try Table.run(Table.FakeVerifier(.status(21010, isRetryable: nil)), subscription: Self.claiming(waiting: 2))
        #expect(refuted.settlement == "postpone")
        let proven = try Table.run(
            Table.FakeVerifier(.status(0, isRetryable: nil), response: try Table.activeResponse()), subscription: Self.claiming(waiting: 2))
        #expect(proven.settlement == "postpone")
        #expect(proven.store.written.count == 1)
    }

    /// A subscription only a refused claim named (no receipt, no state) has nothing left to check:
    /// it leaves the nightly schedule instead of reaching the dead letters every night.
    @Test func aSubscriptionOnlyJunkNamedLeavesTheSchedule() throws {
        let alone = try Table.run(Table.FakeVerifier(.status(21010, isRetryable: nil)), subscription: Self.claiming(receipt: nil))
        #expect(alone.store.judgements.first.map(Self.orphan) == true)
        let owned = try Table.run(Table.FakeVerifier(.status(21010, isRetryable: nil)), subscription: Self.claiming())
        #expect(owned.store.judgements.first.map(Self.orphan) == false)
    }

    static func kind(_ judgement: ClaimJudgement) -> String {
        switch judgement {
        case .proven: "proven"
        case .refuted: "refuted"
        case .givenBack: "given back"
        }
    }

    static func orphan(_ judgement: ClaimJudgement) -> Bool {
        if case .refuted(_, _, let orphan) = judgement { orphan } else { false }
    }
}
