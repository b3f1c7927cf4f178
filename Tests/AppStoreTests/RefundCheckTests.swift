import AppStore
import Foundation
import Testing

/// When a quiet Server API subscription's refunded transactions are read (`RefundCheck`).
struct RefundCheckTests {
    static let firstNight = Date(timeIntervalSince1970: 1_795_000_000)

    /// A fleet first seen on one night, verified every night after: which of its subscriptions read their refunds each night.
    static func readsPerNight(_ ids: [String], nights: Int) -> [Int] {
        var readAt = Dictionary(uniqueKeysWithValues: ids.map { ($0, Instant(firstNight)) })
        return (1...nights).map { night in
            let now = firstNight + Double(night) * 86_400
            let due = ids.filter { RefundCheck(lastRead: readAt[$0], everyDays: 7).isDue(for: $0, at: Instant(now)) }
            for id in due { readAt[id] = Instant(now) }
            return due.count
        }
    }

    @Test func eachNightReadsAnEvenShareAndEverySubscriptionItsOwnWeekly() {
        let ids = (0..<700).map { String(2_000_000_000_000_000 + $0 * 13) }
        let reads = Self.readsPerNight(ids, nights: 21)
        #expect(reads.allSatisfy { $0 == 100 }, "a seventh of the fleet each night, not all of it on the seventh: \(reads)")
        #expect(reads.reduce(0, +) == 3 * ids.count, "each subscription once a week")
    }

    @Test func aSubscriptionSeenFirstOrLongAgoReadsThemAndNotTwiceADay() {
        let id = "2000000000000000"
        let weekly = { (lastRead: Date?) in RefundCheck(lastRead: lastRead.map(Instant.init), everyDays: 7) }
        #expect(weekly(nil).isDue(for: id, at: Instant(Self.firstNight)), "never read")
        #expect(!weekly(Self.firstNight).isDue(for: id, at: Instant(Self.firstNight + 3_600)))
        // Checked less often than nightly (an expired subscription, every three days): never more than a week apart.
        var readAt = Self.firstNight
        var longest = 0.0
        for check in 1...40 {
            let now = Self.firstNight + Double(check) * 3 * 86_400
            if weekly(readAt).isDue(for: id, at: Instant(now)) {
                longest = max(longest, now.timeIntervalSince(readAt))
                readAt = now
            }
        }
        #expect(longest <= 9 * 86_400, "at most a week and the days to the next check: \(longest / 86_400) days")
        #expect(RefundCheck(lastRead: Instant(Self.firstNight), everyDays: 1).isDue(for: id, at: Instant(Self.firstNight + 86_400)))
    }
}
