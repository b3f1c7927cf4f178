import Foundation

/// When a Server API verification of a quiet subscription (no new transaction since the last
/// look) also reads its refunded transactions: a second call. Apple's statuses show each
/// subscription's latest transaction only, so a refund of an earlier period shows nowhere else;
/// its REFUND notification tells at once, and this read is the net under a notification that
/// never arrived.
///
/// It comes every `everyDays` days: on the subscription's own day of the cycle (its id picks it,
/// so each night reads an even share of the fleet, not all of it a week after the first night),
/// and at the latest `everyDays` days after the last read, for subscriptions checked less often
/// than nightly. Days are Apple's: the moment its answer was signed, as `lastRead` was.
public struct RefundCheck: Sendable, Equatable {
    /// When the fleet last saw every refunded transaction (`SubscriptionState.refundsReadAt`); nil: never.
    public var lastRead: Instant?
    public var everyDays: Int

    /// Due whatever the day: for a check someone asked for (a notification, an operator, a registration).
    public static let due = RefundCheck(lastRead: nil, everyDays: 1)

    public init(lastRead: Instant?, everyDays: Int) {
        self.lastRead = lastRead
        self.everyDays = everyDays
    }

    /// Whether the refunds of `originalTransactionID` are due to be read by an answer Apple signed at `now`.
    public func isDue(for originalTransactionID: String, at now: Instant) -> Bool {
        guard let lastRead else { return true }
        let day = { (instant: Instant) in Int((instant.date.timeIntervalSince1970 / 86_400).rounded(.down)) }
        let (today, lastReadDay) = (day(now), day(lastRead))
        guard today > lastReadDay else { return false }
        let days = max(1, everyDays)
        let turn = Int((UInt64(originalTransactionID.suffix(18)) ?? 0) % UInt64(days))
        return today - lastReadDay >= days || (today + turn) % days == 0
    }
}
