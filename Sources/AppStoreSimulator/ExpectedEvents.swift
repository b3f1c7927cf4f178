/// An event a correct reading of Apple's answers must announce: its type (docs/events.md) and when
/// it happened, in milliseconds since 1970.
public struct ExpectedEvent: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let type: String
    public let occurredAtMs: Int64

    public init(_ type: String, at occurredAtMs: Int64) {
        self.type = type
        self.occurredAtMs = occurredAtMs
    }

    public var description: String { "\(type)@\(occurredAtMs)" }

    public static func < (a: ExpectedEvent, b: ExpectedEvent) -> Bool {
        (a.occurredAtMs, a.type) < (b.occurredAtMs, b.type)
    }
}

extension SimulatedSubscription {
    /// What a reader that looked at this subscription at `lookMs` (Apple's clock, ms) must announce:
    /// the first look is a baseline, but a receipt Apple refuses for good fails once, then.
    public func expectedEventsAtFirstLook(at lookMs: Int64) -> [ExpectedEvent] {
        receipt.fixedFailureStatus == nil ? [] : [ExpectedEvent("verification_failed", at: lookMs)]
    }

    /// What a reader must announce when it looks again (`look`), having last looked at
    /// `previousMs`: the changes that Apple's two answers show. Through verifyReceipt the second
    /// answer is the one Apple gives for the receipt the first answer handed back
    /// (`latest_receipt`), asked with exclude-old-transactions as the fleet asks: it lists every
    /// transaction bought up to that receipt's issue, and the newest one of each subscription.
    /// Through the Server API it lists them all.
    public func expectedEvents(since previousMs: Int64, at look: Look) -> [ExpectedEvent] {
        let lookMs = look.ms
        let timeline = receipt.timeline(script)
        let lifetime = receipt.lifetimePurchase.flatMap { $0.status(at: previousMs) == nil ? nil : $0.purchaseMs }
        guard receipt.fixedFailureStatus == nil, previousMs < lookMs,
              let before = timeline.snapshot(at: previousMs), let after = timeline.snapshot(at: lookMs),
              let issued = (receipt.snapshots(at: previousMs).flatMap(\.transactions).map(\.purchaseMs) + [lifetime].compactMap { $0 }).max()
        else { return [] }
        let newest = after.transactions.last!
        let listed = look.seesWholeHistory
            ? after.transactions : after.transactions.filter { $0.purchaseMs <= issued || $0.transactionID == newest.transactionID }
        return TwoLooks(before: before, after: after, listed: listed, lookMs: lookMs).events.sorted()
    }
}

/// Two of Apple's answers about one subscription, and what changed between them by the rules of
/// docs/events.md, written from the simulator's own records of each transaction.
struct TwoLooks {
    let before: ChainSnapshot
    let after: ChainSnapshot
    /// The transactions the second answer lists, in purchase order.
    let listed: [SimulatedTransaction]
    let lookMs: Int64

    var events: [ExpectedEvent] {
        periods + extensionOfThePeriod + refunds + renewalPreferences + priceConsent + offerRedemption + billing + expiry
    }

    private var known: SimulatedTransaction { before.transactions.last! }
    private var current: SimulatedTransaction { after.transactions.last! }

    private static func refunded(_ transaction: SimulatedTransaction) -> Bool {
        transaction.cancellationMs != nil && !transaction.isUpgraded
    }

    private static func hasEnded(_ status: SubscriptionStatus) -> Bool { status == .expired || status == .refunded }

    /// Whether the transaction the first answer ended on has been refunded since.
    private var knownRefundedSince: Bool {
        listed.contains { $0.transactionID == known.transactionID && Self.refunded($0) }
    }

    /// The first purchase of a new chain: the subscription had ended (or was bound to end, with
    /// auto-renew off, or refunded since) and was bought again after access ended.
    private var comeback: SimulatedTransaction? {
        let lapses = Self.hasEnded(before.status) || knownRefundedSince
            || (before.status == .active && !before.renewal.autoRenewOn)
        guard lapses else { return nil }
        let refundedAt = listed.first { $0.transactionID == known.transactionID && Self.refunded($0) }?.cancellationMs
        let accessEnded = min(before.expiresMs, known.cancellationMs ?? refundedAt ?? before.expiresMs)
        return listed.first { $0.transactionID != known.transactionID && $0.purchaseMs > accessEnded }
    }

    // renewed, resubscribed, plan_changed, trial_converted
    private var periods: [ExpectedEvent] {
        var events: [ExpectedEvent] = []
        for (index, entry) in listed.enumerated() {
            let previous = index > 0 ? listed[index - 1] : known
            guard entry.transactionID != known.transactionID, entry.purchaseMs > known.purchaseMs else { continue }
            let otherPlan = entry.plan.productID != previous.plan.productID
            guard previous.isUpgraded || otherPlan || entry.expiresMs > before.expiresMs else { continue }
            if entry.isUpgraded, otherPlan { continue }
            let at = entry.purchaseMs
            if entry.transactionID == comeback?.transactionID {
                events.append(ExpectedEvent("resubscribed", at: at))
            } else if previous.isUpgraded || (otherPlan && entry.purchaseMs < previous.expiresMs) {
                events.append(ExpectedEvent("plan_changed", at: at))
            } else {
                events.append(ExpectedEvent("renewed", at: at))
                if otherPlan { events.append(ExpectedEvent("plan_changed", at: at)) }
                if previous.isTrial, !entry.isTrial { events.append(ExpectedEvent("trial_converted", at: at)) }
            }
        }
        return events
    }

    // renewal_extended
    private var extensionOfThePeriod: [ExpectedEvent] {
        current.transactionID == known.transactionID && after.expiresMs > before.expiresMs
            ? [ExpectedEvent("renewal_extended", at: lookMs)] : []
    }

    // refunded, refund_reversed
    private var refunds: [ExpectedEvent] {
        let refundedBefore = Set(before.transactions.filter(Self.refunded).map(\.transactionID))
        return listed.compactMap { entry in
            if Self.refunded(entry), !refundedBefore.contains(entry.transactionID) {
                return ExpectedEvent("refunded", at: entry.cancellationMs!)
            }
            if refundedBefore.contains(entry.transactionID), entry.cancellationMs == nil {
                return ExpectedEvent("refund_reversed", at: lookMs)
            }
            return nil
        }
    }

    // auto_renew_disabled, auto_renew_enabled, plan_change_scheduled
    private var renewalPreferences: [ExpectedEvent] {
        var events: [ExpectedEvent] = []
        if before.renewal.autoRenewOn != after.renewal.autoRenewOn {
            events.append(ExpectedEvent(after.renewal.autoRenewOn ? "auto_renew_enabled" : "auto_renew_disabled", at: lookMs))
        }
        let target = after.renewal.autoRenewProductID
        if target != current.plan.productID, target != before.renewal.autoRenewProductID {
            events.append(ExpectedEvent("plan_change_scheduled", at: lookMs))
        }
        return events
    }

    // price_increase_consent
    private var priceConsent: [ExpectedEvent] {
        let declined = after.renewal.expirationIntent == 3 && before.renewal.expirationIntent != 3
        let answered = after.renewal.priceConsentStatus.map { $0 != before.renewal.priceConsentStatus } ?? false
        return declined || answered ? [ExpectedEvent("price_increase_consent", at: lookMs)] : []
    }

    // offer_redeemed: the renewal info names an offer it did not name before
    private var offerRedemption: [ExpectedEvent] {
        guard let offer = after.renewal.offerCode, offer != before.renewal.offerCode else { return [] }
        return [ExpectedEvent("offer_redeemed", at: lookMs)]
    }

    // billing_retry_started, grace_period_started, grace_period_ended, billing_recovered
    private var billing: [ExpectedEvent] {
        var events: [ExpectedEvent] = []
        let retrying: (SubscriptionStatus) -> Bool = { $0 == .inGrace || $0 == .inBillingRetry }
        let samePeriod = before.expiresMs == after.expiresMs
        if retrying(after.status), !(retrying(before.status) && samePeriod) {
            events.append(ExpectedEvent("billing_retry_started", at: after.expiresMs))
        }
        if after.status == .inGrace, !(before.status == .inGrace && samePeriod) {
            events.append(ExpectedEvent("grace_period_started", at: after.expiresMs))
        }
        if before.status == .inGrace, [.inBillingRetry, .expired].contains(after.status),
           let graceEnd = before.renewal.graceExpiresMs {
            events.append(ExpectedEvent("grace_period_ended", at: graceEnd))
        }
        if retrying(before.status), after.status == .active, current.transactionID != known.transactionID {
            events.append(ExpectedEvent("billing_recovered", at: current.purchaseMs))
        }
        return events
    }

    // expired: now, or the known period's, when the customer came back after it ran out
    private var expiry: [ExpectedEvent] {
        if comeback != nil, !Self.hasEnded(before.status), !knownRefundedSince {
            return [ExpectedEvent("expired", at: before.expiresMs)]
        }
        guard after.status == .expired, !Self.hasEnded(before.status) || current.transactionID != known.transactionID
        else { return [] }
        return [ExpectedEvent("expired", at: after.expiresMs)]
    }
}
