import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// Writing one verification: the compare-and-set, idempotence, receipts, and the kinds of result.
@Suite struct PersistenceTests {
    typealias S = Scenario

    @Test func persistingTheSameResultTwiceChangesNothingTheSecondTime() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            #expect(baseline.version == 1)
            let renewal = try S.write(baseline, S.response(S.months("1000", 2)), at: S.day(2, 10))
            #expect(renewal.change?.analysis.events.map(\.type) == [.renewed])
            #expect(try ledger.persist(renewal, nextNightlyRun: S.nightlyRun).writtenVersion == 2)
            let after = try ledger.reload(baseline)
            let counts = try [
                ledger.count("transactions", of: baseline), ledger.count("events", of: baseline),
                ledger.count("verifications", of: baseline),
            ]
            #expect(counts == [2, 1, 2])

            // The very same write again (a job processed twice): it read version 1, so it is stale.
            #expect(try ledger.persist(renewal, nextNightlyRun: S.nightlyRun).isStale)
            #expect(try ledger.reload(baseline).version == 2)
            #expect(try ledger.count("verifications", of: baseline) == 2, "a stale write logs nothing")

            // The same result written on top of itself (a redelivered job that reloaded first):
            // no new transaction, event or state; the version moves on and the attempt is logged.
            var again = renewal
            again.change?.expectedVersion = after.version
            #expect(try ledger.persist(again, nextNightlyRun: S.nightlyRun).writtenVersion == 3)
            let final = try ledger.reload(baseline)
            #expect(final.state == after.state)
            #expect(final.nextCheckAt == after.nextCheckAt)
            #expect(try ledger.count("transactions", of: baseline) == 2)
            #expect(try ledger.count("events", of: baseline) == 1)
            #expect(try ledger.count("verifications", of: baseline) == 3)
        }
    }

    @Test func theReceiptNeverLandsInStateVerificationsOrEvents() async throws {
        let secret = "c2VjcmV0LXJlY2VpcHQtZm9yLXRoZS10ZXN0"
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            let write = try S.write(baseline, S.response(S.months("1000", 2), receipt: secret), at: S.day(2, 10))
            #expect(write.change?.analysis.state.latestReceipt?.base64 == secret, "the analysis carries it")
            _ = try ledger.persist(write, nextNightlyRun: S.nightlyRun)
            // A permanent failure too: its analysis keeps the stored state, receipt and all.
            var stored = try ledger.reload(baseline)
            stored.state?.latestReceipt = ReceiptData(base64: secret)
            _ = try ledger.persist(
                .permanentFailure(of: stored, reason: "21010: gone", attempt: S.attempt(at: S.day(2, 11), status: 21010)),
                nextNightlyRun: S.nightlyRun)

            let leaks = try ledger.connection.query("""
                SELECT (SELECT count(*) FROM subscriptions s WHERE s::text LIKE '%' || $1 || '%')
                     + (SELECT count(*) FROM verifications v WHERE v::text LIKE '%' || $1 || '%')
                     + (SELECT count(*) FROM events e WHERE e::text LIKE '%' || $1 || '%')
                     + (SELECT count(*) FROM transactions t WHERE t::text LIKE '%' || $1 || '%') AS n
                """, [.text(secret)])[0]["n"].int64()
            #expect(leaks == 0)
            let loaded = try ledger.reload(baseline)
            #expect(loaded.receipt?.base64 == secret, "it lives in receipts")
            #expect(loaded.state != nil && loaded.state?.latestReceipt == nil)
            #expect(loaded.state?.status == .invalid)
        }
    }

    @Test func latestReceiptReplacesTheStoredReceiptOnlyWhenPresent() async throws {
        try await withLedger { ledger, _ in
            var subscription = try ledger.seed(["1000"])[0]
            #expect(subscription.receipt?.base64 == "receipt-of-1000")
            let steps: [(receipt: String?, expected: String)] = [
                (nil, "receipt-of-1000"), ("bmV3ZXI=", "bmV3ZXI="), (nil, "bmV3ZXI="), ("bmV3ZXN0", "bmV3ZXN0"),
            ]
            for (index, step) in steps.enumerated() {
                let now = S.day(1, 10 + index)
                let write = try S.write(subscription, S.response(S.months("1000", 1), receipt: step.receipt), at: now)
                #expect(try ledger.persist(write, nextNightlyRun: S.nightlyRun).writtenVersion != nil)
                subscription = try ledger.reload(subscription)
                #expect(subscription.receipt?.base64 == step.expected, "step \(index)")
            }
        }
    }

    @Test func aRetryableFailureRecordsOnlyTheAttempt() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            var attempt = S.attempt(at: S.day(2, 10), outcome: .retryable, status: 21005)
            attempt.error = "21005: the receipt server is temporarily unavailable"
            let outcome = try ledger.persist(.unchanged(baseline, attempt: attempt), nextNightlyRun: S.nightlyRun)
            #expect(outcome.writtenVersion == baseline.version, "no new version")
            let after = try ledger.reload(baseline)
            #expect(after.state == baseline.state && after.nextCheckAt == baseline.nextCheckAt)
            #expect(try ledger.column("last_outcome", of: baseline) == "retryable")
            #expect(try ledger.count("verifications", of: baseline) == 2)
            let logged = try #require(ledger.detail(id: baseline.id)?.verifications.first)
            #expect(logged == attempt)
        }
    }

    @Test func aPermanentFailureMakesTheSubscriptionInvalidOnce() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            for day in [10, 11] {
                let subscription = try ledger.reload(baseline)
                let write = VerificationWrite.permanentFailure(
                    of: subscription, reason: "21010: the user account cannot be found",
                    attempt: S.attempt(at: S.day(2, day), outcome: .permanentFailure, status: 21010))
                #expect(try ledger.persist(write, nextNightlyRun: S.nightlyRun).writtenVersion != nil)
            }
            let after = try ledger.reload(baseline)
            #expect(after.state?.status == .invalid)
            #expect(after.nextCheckAt == S.day(2, 14).date, "looked at every third night for a while, in case the receipt becomes valid")
            #expect(try ledger.column("status", of: baseline) == "invalid")
            let events = try #require(ledger.detail(id: baseline.id)?.events)
            #expect(events.map(\.event.type) == [.verificationFailed], "fires once")
            #expect(events.first?.event.payload["status"] == .integer(21010))
        }
    }

    @Test func aRefundReachesTheStoredTransaction() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            var refunded = S.months("1000", 1)
            (refunded[0].cancelled, refunded[0].cancellationReason) = (S.day(1, 20), 1)
            _ = try ledger.persist(try S.write(baseline, S.response(refunded), at: S.day(1, 21)), nextNightlyRun: S.nightlyRun)
            let detail = try #require(try ledger.detail(id: baseline.id))
            #expect(detail.transactions.map(\.cancelledAt) == [S.day(1, 20)])
            #expect(detail.transactions.map(\.cancellationReason) == [1])
            #expect(detail.subscription.status == .refunded)
            #expect(detail.subscription.nextCheckAt == S.day(1, 22).date, "daily, in case Apple reverses the refund")
            #expect(detail.events.map(\.event.type) == [.refunded])
        }
    }
}
