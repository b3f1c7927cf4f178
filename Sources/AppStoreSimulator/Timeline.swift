/// One entry of `in_app` / `latest_receipt_info`.
struct SimulatedTransaction: Sendable {
    let transactionID: UInt64
    let originalTransactionID: UInt64
    let webOrderLineItemID: UInt64
    let plan: Plan
    let purchaseMs: Int64
    let originalPurchaseMs: Int64
    let expiresMs: Int64
    let isTrial: Bool
    let ownership: Ownership
    var cancellationMs: Int64?
    var cancellationReason: Int?
    var isUpgraded = false
    /// The offer code the period was bought with.
    var offerCode: String?
}

/// One entry of `pending_renewal_info`.
struct PendingRenewal: Sendable {
    let originalTransactionID: UInt64
    let productID: String
    let autoRenewProductID: String
    let autoRenewOn: Bool
    let expirationIntent: Int?
    /// Present (true or false) only once a renewal has failed to bill.
    let isInBillingRetry: Bool?
    let graceExpiresMs: Int64?
    /// Present while a price increase awaits the customer: 0 not yet agreed, 1 agreed.
    let priceConsentStatus: Int?
    /// The offer code the next renewal will be bought with, once redeemed.
    let offerCode: String?
}

/// Everything Apple knows about one subscription at one moment, and the state it implies.
struct ChainSnapshot: Sendable {
    let transactions: [SimulatedTransaction]
    let renewal: PendingRenewal
    let status: SubscriptionStatus
    /// Expiry of the entry that decides the state (the latest one).
    let expiresMs: Int64
}

/// Plays a `ChainScript` forward, period by period, up to `now`.
struct Timeline {
    let script: ChainScript
    let time: Durations
    let ids: IdentifierScheme

    /// nil when the subscription was not yet bought at `now`.
    func snapshot(at now: Int64) -> ChainSnapshot? {
        guard now >= script.start else { return nil }
        let originalID = ids.transactionID(chain: script.chain, sequence: 0)
        var transactions: [SimulatedTransaction] = []
        var plan = script.firstPlan
        var nextPlan = plan
        var periodStart = script.start
        var isTrial = script.startsWithTrial
        var autoRenew = true
        var renewals = 0
        var resubscribed = false
        var upgraded = false
        var priceConsent: Int?
        // The offer code redeemed in the period running (the renewal info names it), and the one
        // the next period is bought with.
        var redeemedOffer: String?
        var offerForNextPeriod: String?

        func finish(_ status: SubscriptionStatus, autoRenew: Bool, intent: Int? = nil,
                    billingRetry: Bool? = nil, graceEnd: Int64? = nil) -> ChainSnapshot {
            let renewal = PendingRenewal(
                originalTransactionID: originalID, productID: plan.productID, autoRenewProductID: nextPlan.productID,
                autoRenewOn: autoRenew, expirationIntent: intent, isInBillingRetry: billingRetry, graceExpiresMs: graceEnd,
                priceConsentStatus: priceConsent, offerCode: redeemedOffer)
            return ChainSnapshot(
                transactions: transactions, renewal: renewal, status: status, expiresMs: transactions.last!.expiresMs)
        }
        func during(_ at: Int64?, _ end: Int64) -> Bool {
            guard let at else { return false }
            return at >= periodStart && at < end && at <= now
        }

        while true {
            var periodEnd = periodStart + (isTrial ? time.trial : time.length(of: plan))
            for moved in script.renewalExtensions where during(moved.at, periodEnd) { periodEnd += moved.by }
            transactions.append(SimulatedTransaction(
                transactionID: ids.transactionID(chain: script.chain, sequence: transactions.count),
                originalTransactionID: originalID,
                webOrderLineItemID: ids.webOrderLineItemID(chain: script.chain, sequence: transactions.count),
                plan: plan, purchaseMs: periodStart, originalPurchaseMs: script.start, expiresMs: periodEnd,
                isTrial: isTrial, ownership: script.ownership, offerCode: offerForNextPeriod))
            offerForNextPeriod = nil

            if let refund = script.earlierRefund, transactions.count > 1, during(refund.at, periodEnd),
               refund.at + refund.shownAfter <= now {
                transactions[transactions.count - 2].cancellationMs = refund.at
                transactions[transactions.count - 2].cancellationReason = 0
            }
            let reversed = script.refund.flatMap { refund in script.refundReversedAfter.map { refund.at + $0 <= now } } ?? false
            if let refund = script.refund, during(refund.at, periodEnd), !reversed {
                transactions[transactions.count - 1].cancellationMs = refund.at
                transactions[transactions.count - 1].cancellationReason = refund.reason
                return finish(.refunded, autoRenew: false, intent: now >= periodEnd ? 1 : nil)
            }
            if let upgrade = script.upgrade, !upgraded, during(upgrade.at, periodEnd) {
                upgraded = true
                transactions[transactions.count - 1].isUpgraded = true
                transactions[transactions.count - 1].cancellationMs = upgrade.at
                (plan, nextPlan, periodStart, isTrial) = (upgrade.to, upgrade.to, upgrade.at, false)
                continue
            }
            if let change = script.planChange, during(change.at, periodEnd) { nextPlan = change.to }
            if during(script.autoRenewOffAt, periodEnd) { autoRenew = false }
            priceConsent = nil
            if let increase = script.priceIncrease, during(increase.askedAt, periodEnd) {
                let agreedAt = increase.agreesAfter.map { increase.askedAt + $0 }
                priceConsent = agreedAt.map { $0 <= now } == true ? 1 : 0
                if periodEnd <= now, agreedAt.map({ $0 >= periodEnd }) ?? true {
                    priceConsent = nil  // never agreed: the period ends for good
                    return finish(.expired, autoRenew: false, intent: 3)
                }
            }

            redeemedOffer = during(script.offerRedeemedAt, periodEnd) ? Catalog.offerCode : nil

            guard periodEnd <= now else { return finish(.active, autoRenew: autoRenew) }

            // The period is over: renew, lapse, or fall into billing retry; a redeemed offer buys the next period.
            (offerForNextPeriod, redeemedOffer) = (redeemedOffer, nil)
            if let maxRenewals = time.maxRenewals, renewals >= maxRenewals { autoRenew = false }
            if !autoRenew {
                if let lapse = script.resubscribeAfter, !resubscribed, periodEnd + lapse <= now {
                    resubscribed = true
                    autoRenew = true
                    (plan, periodStart, isTrial) = (nextPlan, periodEnd + lapse, false)
                    continue
                }
                return finish(.expired, autoRenew: false, intent: 1)
            }
            renewals += 1
            if let failure = script.billingFailure, failure.renewal == renewals {
                let graceEnd = failure.hasGrace ? periodEnd + time.grace : nil
                if let recovery = failure.recoversAfter, periodEnd + recovery <= now {
                    (plan, periodStart, isTrial) = (nextPlan, periodEnd + recovery, false)
                    continue
                }
                guard now < periodEnd + time.billingRetry else {
                    return finish(.expired, autoRenew: false, intent: 2, billingRetry: false)
                }
                let inGrace = graceEnd.map { now < $0 } ?? false
                return finish(inGrace ? .inGrace : .inBillingRetry, autoRenew: true, intent: 2,
                              billingRetry: true, graceEnd: graceEnd)
            }
            (plan, periodStart, isTrial) = (nextPlan, periodEnd, false)
        }
    }
}
