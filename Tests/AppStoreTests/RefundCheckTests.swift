import AppStore
import Foundation
import Testing

/// When a quiet Server API subscription's refunded transactions are read (`RefundCheck`).
struct RefundCheckTests {
    static let firstNight = Date(timeIntervalSince1970: 1_795_000_000)

    static func weekly(_ lastRead: Date?, slot: Int64 = 0, auditNights: Int? = nil) -> RefundCheck {
        RefundCheck(lastRead: lastRead.map(Instant.init), everyDays: 7, auditNights: auditNights, turn: NightlyTurn(slot: slot))
    }

    /// A fleet first seen on one night, verified every night after: which of its subscriptions read their refunds each night.
    static func readsPerNight(_ ids: [Int64], nights: Int) -> [Int] {
        var readAt = Dictionary(uniqueKeysWithValues: ids.map { ($0, firstNight) })
        return (1...nights).map { night in
            let now = firstNight + Double(night) * 86_400
            let due = ids.filter { weekly(readAt[$0], slot: $0).isDue(at: Instant(now)) }
            for id in due { readAt[id] = now }
            return due.count
        }
    }

    @Test func eachNightReadsAnEvenShareAndEverySubscriptionItsOwnWeekly() {
        let ids = (0..<700).map { Int64(1 + $0 * 13) }
        let reads = Self.readsPerNight(ids, nights: 21)
        #expect(reads.allSatisfy { $0 == 100 }, "a seventh of the fleet each night, not all of it on the seventh: \(reads)")
        #expect(reads.reduce(0, +) == 3 * ids.count, "each subscription once a week")
    }

    @Test func aSubscriptionSeenFirstOrLongAgoReadsThemAndNotTwiceADay() {
        #expect(Self.weekly(nil).isDue(at: Instant(Self.firstNight)), "never read")
        #expect(!Self.weekly(Self.firstNight).isDue(at: Instant(Self.firstNight + 3_600)))
        // Checked less often than nightly (an expired subscription, every three days): never more than a week apart.
        var readAt = Self.firstNight
        var longest = 0.0
        for check in 1...40 {
            let now = Self.firstNight + Double(check) * 3 * 86_400
            if Self.weekly(readAt).isDue(at: Instant(now)) {
                longest = max(longest, now.timeIntervalSince(readAt))
                readAt = now
            }
        }
        #expect(longest <= 9 * 86_400, "at most a week and the days to the next check: \(longest / 86_400) days")
        #expect(RefundCheck(lastRead: Instant(Self.firstNight), everyDays: 1, turn: NightlyTurn(slot: 5))
            .isDue(at: Instant(Self.firstNight + 86_400)))
    }

    /// Every audit night reads them, however recent the last read (a renewal's check, say): the audit
    /// finds an unannounced refund within its period, which the weekly turn alone would not.
    @Test func everyAuditNightReadsThemWhateverTheLastRead() {
        let audit: Int64 = 30
        let night = NightlyTurn.night(of: Self.firstNight)
        var audited = 0
        for slot: Int64 in 0..<60 {
            let auditNight = night + NightlyTurn(slot: slot).nightsUntilTurn(from: night, every: audit)
            let at = Date(timeIntervalSince1970: Double(auditNight) * 86_400 + 7_200)
            // A read a few days before that the weekly rule would let stand (none when the audit night is also the weekly turn).
            guard let days = (1...6).first(where: { !Self.weekly(at - Double($0) * 86_400, slot: slot).isDue(at: Instant(at)) }) else { continue }
            #expect(Self.weekly(at - Double(days) * 86_400, slot: slot, auditNights: Int(audit)).isDue(at: Instant(at)), "slot \(slot)")
            audited += 1
        }
        #expect(audited > 40, "most audit nights are not the weekly turn: \(audited)")
    }
}
