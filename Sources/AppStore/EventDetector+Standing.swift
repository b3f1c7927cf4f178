/// Events about the standing of a subscription: refunds and their reversal, renewal preferences,
/// price consent, offers redeemed, billing, expiry.
extension EventDetector {
    // MARK: refunded, refund_reversed

    /// Refunds the stored state had not seen: of any transaction, the latest or an earlier period's
    /// found late (a cancellation dated before the last verification can still be news).
    var refunds: [SubscriptionEvent] {
        let known = Self.knownRefunds(of: stored)
        return entries.compactMap { entry in
            guard entry.isRefunded, let cancelledAt = entry.cancellationDate, !known.contains(entry.transactionID)
            else { return nil }
            return event(.refunded, facts: [entry.transactionID], at: cancelledAt, [
                "transaction_id": .string(entry.transactionID), "product_id": JSONValue(entry.productID),
                "purchased_at": JSONValue(entry.purchaseDate), "expires_at": JSONValue(entry.expiresDate),
                "cancelled_at": JSONValue(cancelledAt),
                "cancellation_reason": JSONValue(entry.cancellationReason),
                "cancellation_reason_meaning": JSONValue(cancellationMeaning(entry.cancellationReason, ownership: entry.ownershipType)),
            ])
        }
    }

    /// Refunds Apple took back: a transaction the stored state knew as refunded is listed again
    /// without its cancellation. Apple gives no date for the reversal.
    var reversals: [SubscriptionEvent] {
        Self.reversedRefunds(of: stored, in: entries).map { entry in
            event(.refundReversed, facts: [entry.transactionID, stored.verifiedAt.idFact], at: nil, [
                "transaction_id": .string(entry.transactionID), "product_id": JSONValue(entry.productID),
                "purchased_at": JSONValue(entry.purchaseDate), "expires_at": JSONValue(entry.expiresDate),
                "status": .string(new.status.rawValue),
            ])
        }
    }

    /// The transactions whose refund `stored` had seen. A state stored before the fleet kept the
    /// list tells only what it holds itself: its latest transaction's refund (its cancellation, or
    /// its refunded status), whatever the new answer says of it, so that a reversal is seen. An
    /// earlier period's refund is announced again: its event has the id it had when first seen,
    /// which the ledger keeps once, so nothing reaches consumers twice and nothing found late is lost.
    static func knownRefunds(of stored: SubscriptionState) -> Set<String> {
        if let ids = stored.refundedTransactionIDs { return Set(ids) }
        guard stored.cancellation != nil || stored.status == .refunded, let latest = stored.latestTransactionID else { return [] }
        return [latest]
    }

    static func reversedRefunds(of stored: SubscriptionState, in entries: [ReceiptTransaction]) -> [ReceiptTransaction] {
        let known = knownRefunds(of: stored)
        return entries.filter { known.contains($0.transactionID) && $0.cancellationDate == nil }
    }

    // MARK: auto_renew_disabled, auto_renew_enabled, plan_change_scheduled

    var renewalPreferenceEvents: [SubscriptionEvent] {
        var events: [SubscriptionEvent] = []
        if let before = stored.autoRenew, let now = new.autoRenew, before != now {
            // Apple gives no date for the switch: it takes effect at the period's end, and the
            // stored verification separates one switch from a later one in the same period.
            events.append(event(now ? .autoRenewEnabled : .autoRenewDisabled,
                                facts: [String(now), new.expiresAt?.idFact, stored.verifiedAt.idFact], at: nil, [
                "auto_renew": .bool(now), "product_id": JSONValue(new.productID),
                "auto_renew_product_id": JSONValue(new.autoRenewProductID),
                "effective_at": JSONValue(new.expiresAt),
            ]))
        }
        if let target = new.autoRenewProductID, let current = new.productID, target != current,
           target != stored.autoRenewProductID {
            events.append(event(.planChangeScheduled, facts: [target, new.expiresAt?.idFact], at: nil, [
                "product_id": .string(current), "auto_renew_product_id": .string(target),
                "kind": JSONValue(products.kind(from: current, to: target)?.rawValue),
                "effective_at": JSONValue(new.expiresAt),
            ]))
        }
        return events
    }

    // MARK: price_increase_consent

    /// The customer's answer to a price increase: pending while `price_consent_status` is 0,
    /// agreed at 1, declined when the subscription expires for it (expiration intent 3).
    var priceConsent: [SubscriptionEvent] {
        let answer: String? =
            if new.expirationIntent == 3, stored.expirationIntent != 3 { "declined" }
            else if let consent = new.priceConsentStatus, consent != stored.priceConsentStatus {
                consent == 1 ? "agreed" : "pending"
            } else { nil }
        guard let answer else { return [] }
        return [event(.priceIncreaseConsent, facts: [answer, new.expiresAt?.idFact], at: nil, [
            "consent": .string(answer), "price_consent_status": JSONValue(new.priceConsentStatus),
            "product_id": JSONValue(new.productID), "auto_renew_product_id": JSONValue(new.autoRenewProductID),
            "effective_at": JSONValue(new.expiresAt),
        ])]
    }

    // MARK: offer_redeemed

    /// An offer the customer redeemed for the next renewal: the renewal info names an offer code or
    /// a promotional offer it did not name before. Apple gives no date.
    var offerRedemptions: [SubscriptionEvent] {
        let offers = [("offer_code", new.renewalOfferCodeRefName, stored.renewalOfferCodeRefName),
                      ("promotional", new.renewalPromotionalOfferID, stored.renewalPromotionalOfferID)]
        return offers.compactMap { kind, offer, before in
            guard let offer, offer != before else { return nil }
            return event(.offerRedeemed, facts: [kind, offer, new.expiresAt?.idFact], at: nil, [
                "offer_type": .string(kind), "offer_identifier": .string(offer),
                "product_id": JSONValue(new.productID), "auto_renew_product_id": JSONValue(new.autoRenewProductID),
                "effective_at": JSONValue(new.expiresAt),
            ])
        }
    }

    // MARK: billing_retry_started, grace_period_started, grace_period_ended, billing_recovered

    var billingEvents: [SubscriptionEvent] {
        var events: [SubscriptionEvent] = []
        let samePeriod = stored.expiresAt == new.expiresAt
        let failedRenewal: [String: JSONValue] = [
            "transaction_id": JSONValue(new.latestTransactionID), "product_id": JSONValue(new.productID),
            "expires_at": JSONValue(new.expiresAt), "grace_period_expires_at": JSONValue(new.gracePeriodExpiresAt),
            "expiration_intent": JSONValue(new.expirationIntent),
        ]
        if new.status.isRetryingBilling, !(stored.status.isRetryingBilling && samePeriod) {
            events.append(event(.billingRetryStarted, facts: [new.latestTransactionID, new.expiresAt?.idFact],
                                at: new.expiresAt, failedRenewal))
        }
        if new.status == .inGrace, !(stored.status == .inGrace && samePeriod) {
            events.append(event(.gracePeriodStarted,
                                facts: [new.latestTransactionID, new.expiresAt?.idFact, new.gracePeriodExpiresAt?.idFact],
                                at: new.expiresAt, failedRenewal))
        }
        // Grace over and still unpaid: access ends, whether Apple keeps retrying or gives up.
        if stored.status == .inGrace, [.inBillingRetry, .expired].contains(new.status),
           let graceEnd = stored.gracePeriodExpiresAt {
            events.append(event(.gracePeriodEnded, facts: [stored.latestTransactionID, graceEnd.idFact], at: graceEnd,
                                failedRenewal + ["grace_period_expires_at": JSONValue(graceEnd),
                                                 "status": .string(new.status.rawValue)]))
        }
        if stored.status.isRetryingBilling, new.status == .active, new.latestTransactionID != stored.latestTransactionID {
            events.append(event(.billingRecovered, facts: [new.latestTransactionID], at: new.purchasedAt, [
                "transaction_id": JSONValue(new.latestTransactionID), "product_id": JSONValue(new.productID),
                "purchased_at": JSONValue(new.purchasedAt), "expires_at": JSONValue(new.expiresAt),
                "previous_status": .string(stored.status.rawValue),
            ]))
        }
        return events
    }

    // MARK: expired

    /// The subscription ran out: now, or (when it was bought again since) the stored period, which
    /// lapsed between two looks.
    var expiry: [SubscriptionEvent] {
        let storedPeriodRefunded = entries.contains { $0.transactionID == stored.latestTransactionID && $0.isRefunded }
        if resubscription != nil, !stored.status.hasLapsed, !storedPeriodRefunded {
            return [expired(transactionID: stored.latestTransactionID, productID: stored.productID,
                            expiresAt: stored.expiresAt, autoRenew: false, intent: stored.expirationIntent ?? 1)]
        }
        guard new.status == .expired,
              !stored.status.hasLapsed || new.latestTransactionID != stored.latestTransactionID
        else { return [] }
        return [expired(transactionID: new.latestTransactionID, productID: new.productID, expiresAt: new.expiresAt,
                        autoRenew: new.autoRenew, intent: new.expirationIntent)]
    }

    private func expired(
        transactionID: String?, productID: String?, expiresAt: Instant?, autoRenew: Bool?, intent: Int?
    ) -> SubscriptionEvent {
        event(.expired, facts: [transactionID, expiresAt?.idFact], at: expiresAt, [
            "transaction_id": JSONValue(transactionID), "product_id": JSONValue(productID),
            "expires_at": JSONValue(expiresAt), "auto_renew": JSONValue(autoRenew),
            "expiration_intent": JSONValue(intent),
            "expiration_reason": JSONValue(intent.flatMap(expirationIntentMeaning)),
        ])
    }
}
