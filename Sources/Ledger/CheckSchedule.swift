import AppStore
import Foundation

/// When to verify a subscription next, from the state its last verification left. Pure: the clock
/// and the time of the next nightly run are parameters.
///
/// The scheduler runs nightly and enqueues what is due at its start, so checks a day or more away
/// are moved to the nightly run on or before them: "every 3 days" then means three nights, not four.
///
/// An active subscription is checked just after its period ends (its renewal is due) and, with an
/// `auditInterval`, otherwise only by the rolling audit: on one night in every K, its own (`auditSlot`
/// spreads subscriptions evenly across the K nights). Notifications tell every change in between,
/// and a renewal they announce moves the period's end, and with it the check. Without one, every
/// night (for apps whose notifications do not arrive, the scheduler checks active ones nightly anyway).
public struct CheckSchedule: Sendable, Equatable {
    /// How long after a period ends (expiry, end of grace) to look: Apple needs a moment to renew.
    public var afterExpiry: TimeInterval
    /// Between checks of a subscription in billing retry or grace.
    public var billingRetryInterval: TimeInterval
    /// Between checks of an expired subscription while Apple may still recover it.
    public var expiredInterval: TimeInterval
    /// How long after expiry Apple keeps retrying billing (60 days), so an expired subscription
    /// may still come back.
    public var expiredWatchPeriod: TimeInterval
    /// Between checks of a subscription that expired longer ago than `expiredWatchPeriod`.
    public var dormantInterval: TimeInterval
    /// Between checks of a sandbox subscription, whose periods last minutes.
    public var sandboxInterval: TimeInterval
    /// Between checks of a refunded subscription, while Apple may still reverse the refund; an
    /// invalid one (Apple could not read it, or its account is gone) is looked at every
    /// `expiredInterval` meanwhile, in case the receipt becomes valid again.
    public var refundedOrInvalidInterval: TimeInterval
    /// How long after the refund (or the first permanent failure) to keep looking; after that
    /// only a notification brings the subscription back.
    public var refundedOrInvalidWatchPeriod: TimeInterval
    /// Between audits of an active subscription (whole days); nil checks active ones every night.
    public var auditInterval: TimeInterval?

    public init(
        afterExpiry: TimeInterval = 10 * CheckSchedule.minute, billingRetryInterval: TimeInterval = CheckSchedule.day,
        expiredInterval: TimeInterval = 3 * CheckSchedule.day, expiredWatchPeriod: TimeInterval = 60 * CheckSchedule.day,
        dormantInterval: TimeInterval = 30 * CheckSchedule.day, sandboxInterval: TimeInterval = 5 * CheckSchedule.minute,
        refundedOrInvalidInterval: TimeInterval = CheckSchedule.day,
        refundedOrInvalidWatchPeriod: TimeInterval = 30 * CheckSchedule.day, auditInterval: TimeInterval? = nil
    ) {
        self.afterExpiry = afterExpiry
        self.billingRetryInterval = billingRetryInterval
        self.expiredInterval = expiredInterval
        self.expiredWatchPeriod = expiredWatchPeriod
        self.dormantInterval = dormantInterval
        self.sandboxInterval = sandboxInterval
        self.refundedOrInvalidInterval = refundedOrInvalidInterval
        self.refundedOrInvalidWatchPeriod = refundedOrInvalidWatchPeriod
        self.auditInterval = auditInterval
    }

    /// The time of the next check, or nil when only a notification should trigger one.
    /// - Parameters:
    ///   - state: the stored state; nil for a subscription never verified.
    ///   - now: the time of the verification that produced `state`.
    ///   - nextNightlyRun: the first nightly scheduler run after `now`; nights are a day apart.
    ///   - auditSlot: which of the audit's nights is the subscription's (its id does).
    public func nextCheck(for state: SubscriptionState?, now: Date, nextNightlyRun: Date, auditSlot: Int64 = 0) -> Date? {
        guard let state else { return now }
        switch state.status {
        case .refunded, .invalid:
            let since = state.status == .refunded ? state.cancellation?.cancelledAt : state.invalidSince
            guard let since, now < since.date + refundedOrInvalidWatchPeriod else { return nil }
            let interval = state.status == .refunded ? refundedOrInvalidInterval : expiredInterval
            return nightlyRun(notAfter: now + interval, next: nextNightlyRun)
        case .expired where state.environment == .sandbox:
            // A tester's subscription that ran out of renewals: it comes back only if they buy again,
            // which a notification announces (or the dormant check finds).
            return nightlyRun(notAfter: now + dormantInterval, next: nextNightlyRun)
        case _ where state.environment == .sandbox:  // any other status: periods last minutes
            return now + sandboxInterval
        case .active:
            // Just after expiry, when the renewal is due; and by the audit (or nightly) before that.
            let afterPeriod = state.expiresAt.map { $0.date + afterExpiry } ?? nextNightlyRun
            return min(afterPeriod, auditNights.map { auditNight(slot: auditSlot, every: $0, next: nextNightlyRun) } ?? nextNightlyRun)
        case .inGrace:
            let afterGrace = state.gracePeriodExpiresAt.map { $0.date + afterExpiry } ?? .distantFuture
            return min(afterGrace, nightlyRun(notAfter: now + billingRetryInterval, next: nextNightlyRun))
        case .inBillingRetry:
            return nightlyRun(notAfter: now + billingRetryInterval, next: nextNightlyRun)
        case .expired:
            let recoverable = state.expiresAt.map { now < $0.date + expiredWatchPeriod } ?? true
            let interval = recoverable ? expiredInterval : dormantInterval
            return nightlyRun(notAfter: now + interval, next: nextNightlyRun)
        }
    }

    /// Nights between audits of an active subscription; nil checks active ones every night.
    public var auditNights: Int? {
        auditInterval.map { max(1, Int(($0 / Self.day).rounded())) }
    }

    /// The first night from `next` on that is `slot`'s turn in every `nights` (`NightlyTurn`): at
    /// most `nights` away, and the same nights for the same slot.
    private func auditNight(slot: Int64, every nights: Int, next: Date) -> Date {
        let night = NightlyTurn.night(of: next)
        let wait = NightlyTurn(slot: slot).nightsUntilTurn(from: night, every: Int64(nights))
        return next + Double(wait) * Self.day
    }

    /// The last nightly run at or before `date`; `date` itself when it comes before the next run.
    private func nightlyRun(notAfter date: Date, next: Date) -> Date {
        guard date >= next else { return date }
        let nights = (date.timeIntervalSince(next) / Self.day).rounded(.down)
        return next + nights * Self.day
    }

    public static let minute: TimeInterval = 60
    public static let day: TimeInterval = 86_400
}
