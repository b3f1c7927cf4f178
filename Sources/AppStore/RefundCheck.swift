import Foundation

/// When a Server API verification of a quiet subscription (no new transaction since the last
/// look) also reads its refunded transactions: a second call. Apple's statuses show each
/// subscription's latest transaction only, so a refund of an earlier period shows nowhere else;
/// its REFUND notification tells at once, and this read is the net under a notification that
/// never arrived.
///
/// It comes every `everyDays` days: on the subscription's own night of the cycle (`NightlyTurn`,
/// so each night reads an even share of the fleet, not all of it a week after the first night),
/// and at the latest `everyDays` days after the last read, for subscriptions checked less often
/// than nightly; and on each of its audit nights (`auditNights`): the audit promises to find an
/// unannounced change within its period, and a refund of an earlier period only a read finds,
/// whenever the last one was. Days are Apple's: the moment its answer was signed, as `lastRead` was.
public struct RefundCheck: Sendable, Equatable {
    /// When the fleet last saw every refunded transaction (`SubscriptionState.refundsReadAt`); nil: never.
    public var lastRead: Instant?
    public var everyDays: Int
    /// Nights between the subscription's audits (`CheckSchedule.auditInterval`); nil: no audit.
    public var auditNights: Int?
    public var turn: NightlyTurn

    /// Due whatever the day: for a check someone asked for (a notification, an operator, a registration).
    public static let due = RefundCheck(lastRead: nil, everyDays: 1, turn: NightlyTurn(slot: 0))

    public init(lastRead: Instant?, everyDays: Int, auditNights: Int? = nil, turn: NightlyTurn) {
        self.lastRead = lastRead
        self.everyDays = everyDays
        self.auditNights = auditNights
        self.turn = turn
    }

    /// Whether the refunds are due to be read by an answer Apple signed at `now`.
    public func isDue(at now: Instant) -> Bool {
        guard let lastRead else { return true }
        let (today, lastReadNight) = (NightlyTurn.night(of: now.date), NightlyTurn.night(of: lastRead.date))
        guard today > lastReadNight else { return false }
        let days = Int64(max(1, everyDays))
        return today - lastReadNight >= days || turn.nightsUntilTurn(from: today, every: days) == 0
            || auditNights.map { turn.nightsUntilTurn(from: today, every: Int64($0)) == 0 } == true
    }
}
