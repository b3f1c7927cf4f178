import AppStore
import Foundation
import Ledger
import Testing

/// The next-check rules as a table: a verification on 10 March at 15:00 UTC, the next nightly run
/// on 11 March at 02:00.
@Suite struct CheckScheduleTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var schedule = CheckSchedule()
        var state: SubscriptionState?
        /// "2024-03-10T15:10" in UTC, or nil for "only on notification".
        var expected: String?

        var testDescription: String { name }
    }

    static let now = at("2024-03-10T15:00")
    static let nightly = at("2024-03-11T02:00")

    static func at(_ minute: String) -> Date {
        guard let instant = Instant(iso8601: minute + ":00.000Z") else { fatalError("bad test time \(minute)") }
        return instant.date
    }

    /// `since` is when a refunded subscription was cancelled, or an invalid one became invalid.
    static func state(
        _ status: SubscriptionStatus, expires: String? = nil, graceEnds: String? = nil, since: String? = nil,
        environment: AppStoreEnvironment = .production
    ) -> SubscriptionState {
        var state = SubscriptionState(originalTransactionID: "1000", status: status, verifiedAt: Instant(now))
        state.expiresAt = expires.map { Instant(at($0)) }
        state.gracePeriodExpiresAt = graceEnds.map { Instant(at($0)) }
        state.environment = environment
        if let since {
            if status == .refunded { state.cancellation = Cancellation(cancelledAt: Instant(at(since)), reason: 0) }
            if status == .invalid { state.invalidSince = Instant(at(since)) }
        }
        return state
    }

    static let cases: [Case] = [
        Case(name: "never verified: now", state: nil, expected: "2024-03-10T15:00"),
        Case(name: "active, expiring today: just after expiry",
             state: state(.active, expires: "2024-03-10T18:00"), expected: "2024-03-10T18:10"),
        Case(name: "active, expiring after the nightly run: the nightly run",
             state: state(.active, expires: "2024-04-01T00:00"), expected: "2024-03-11T02:00"),
        Case(name: "active, no expiry: the nightly run", state: state(.active), expected: "2024-03-11T02:00"),
        Case(name: "active, wider margin",
             schedule: CheckSchedule(afterExpiry: 3600), state: state(.active, expires: "2024-03-10T18:00"),
             expected: "2024-03-10T19:00"),
        Case(name: "grace ending today: just after grace",
             state: state(.inGrace, expires: "2024-03-09T00:00", graceEnds: "2024-03-10T20:00"),
             expected: "2024-03-10T20:10"),
        Case(name: "grace ending later: daily, at the nightly run",
             state: state(.inGrace, expires: "2024-03-09T00:00", graceEnds: "2024-03-20T00:00"),
             expected: "2024-03-11T02:00"),
        Case(name: "billing retry: daily, at the nightly run",
             state: state(.inBillingRetry, expires: "2024-03-09T00:00"), expected: "2024-03-11T02:00"),
        Case(name: "billing retry every 6 h: before the nightly run",
             schedule: CheckSchedule(billingRetryInterval: 6 * 3600),
             state: state(.inBillingRetry, expires: "2024-03-09T00:00"), expected: "2024-03-10T21:00"),
        Case(name: "billing retry every 12 h: moved to the nightly run before it",
             schedule: CheckSchedule(billingRetryInterval: 12 * 3600),
             state: state(.inBillingRetry, expires: "2024-03-09T00:00"), expected: "2024-03-11T02:00"),
        Case(name: "expired 5 days ago: the nightly run 3 days on",
             state: state(.expired, expires: "2024-03-05T15:00"), expected: "2024-03-13T02:00"),
        Case(name: "expired 59 days ago: still every 3 days",
             state: state(.expired, expires: "2024-01-11T15:00"), expected: "2024-03-13T02:00"),
        Case(name: "expired 61 days ago: monthly",
             state: state(.expired, expires: "2024-01-09T15:00"), expected: "2024-04-09T02:00"),
        Case(name: "expired, weekly while recoverable",
             schedule: CheckSchedule(expiredInterval: 7 * 86_400),
             state: state(.expired, expires: "2024-03-05T15:00"), expected: "2024-03-17T02:00"),
        Case(name: "refunded a week ago: daily, in case Apple reverses it",
             state: state(.refunded, expires: "2024-04-01T00:00", since: "2024-03-03T09:00"), expected: "2024-03-11T02:00"),
        Case(name: "refunded 31 days ago: only on notification",
             state: state(.refunded, expires: "2024-04-01T00:00", since: "2024-02-08T09:00"), expected: nil),
        Case(name: "refunded a week ago, weekly",
             schedule: CheckSchedule(refundedOrInvalidInterval: 7 * 86_400),
             state: state(.refunded, since: "2024-03-03T09:00"), expected: "2024-03-17T02:00"),
        Case(name: "refunded, watched for 3 days only",
             schedule: CheckSchedule(refundedOrInvalidWatchPeriod: 3 * 86_400),
             state: state(.refunded, since: "2024-03-03T09:00"), expected: nil),
        Case(name: "invalid since today: every third night, in case the receipt becomes valid",
             state: state(.invalid, since: "2024-03-10T15:00"), expected: "2024-03-13T02:00"),
        Case(name: "invalid for 31 days: only on notification", state: state(.invalid, since: "2024-02-08T15:00"), expected: nil),
        Case(name: "invalid, stored before the date was kept: only on notification", state: state(.invalid), expected: nil),
        Case(name: "sandbox, active: minutes",
             state: state(.active, expires: "2024-03-10T15:03", environment: .sandbox), expected: "2024-03-10T15:05"),
        Case(name: "sandbox, expired: monthly, its tester buying again is announced",
             state: state(.expired, expires: "2024-03-10T14:00", environment: .sandbox), expected: "2024-04-09T02:00"),
        Case(name: "sandbox, in billing retry: minutes",
             state: state(.inBillingRetry, expires: "2024-03-10T14:58", environment: .sandbox), expected: "2024-03-10T15:05"),
        Case(name: "sandbox, every 2 min",
             schedule: CheckSchedule(sandboxInterval: 120), state: state(.active, environment: .sandbox),
             expected: "2024-03-10T15:02"),
        Case(name: "sandbox, refunded: only on notification",
             state: state(.refunded, environment: .sandbox), expected: nil),
    ]

    @Test(arguments: cases)
    func nextCheck(_ row: Case) {
        let next = row.schedule.nextCheck(for: row.state, now: Self.now, nextNightlyRun: Self.nightly)
        #expect(next == row.expected.map(Self.at))
    }

    /// With an audit every 30 nights, an active subscription far from its renewal waits for its own
    /// night: 300 subscriptions fall on 30 nights, ten each, every one within 30 nights, and the
    /// same slot keeps its night. A renewal due sooner is checked just after it.
    @Test func anAuditedActiveSubscriptionWaitsForItsNightOrItsRenewal() {
        let schedule = CheckSchedule(auditInterval: 30 * CheckSchedule.day)
        let far = Self.state(.active, expires: "2024-05-01T00:00")
        let nights = (0..<300).compactMap { schedule.nextCheck(for: far, now: Self.now, nextNightlyRun: Self.nightly, auditSlot: Int64($0)) }
        let perNight = Dictionary(grouping: nights, by: { $0 }).mapValues(\.count)
        #expect(perNight.count == 30 && perNight.values.allSatisfy { $0 == 10 }, "\(perNight.values.sorted())")
        #expect(nights.min() == Self.nightly && nights.max() == Self.nightly + 29 * CheckSchedule.day)
        #expect(nights.allSatisfy { Int64($0.timeIntervalSince(Self.nightly)) % 86_400 == 0 }, "on nightly runs")
        let later = Self.nightly + 5 * CheckSchedule.day
        #expect(schedule.nextCheck(for: far, now: Self.now + 5 * CheckSchedule.day, nextNightlyRun: later, auditSlot: 7) == nights[7],
                "the same slot, the same night")
        #expect(schedule.nextCheck(for: far, now: Self.now, nextNightlyRun: Self.nightly, auditSlot: -3) != nil, "any id has a night")

        let soon = Self.state(.active, expires: "2024-03-12T10:00")
        let slotFarAway = (0..<30).first { nights[$0] > Self.at("2024-03-13T00:00") }!
        #expect(schedule.nextCheck(for: soon, now: Self.now, nextNightlyRun: Self.nightly, auditSlot: Int64(slotFarAway))
                == Self.at("2024-03-12T10:10"), "the renewal is due first")
        #expect(CheckSchedule().nextCheck(for: far, now: Self.now, nextNightlyRun: Self.nightly, auditSlot: Int64(slotFarAway))
                == Self.nightly, "without an audit, every night")
    }
}
