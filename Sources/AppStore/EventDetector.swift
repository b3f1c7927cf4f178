/// Finds what changed between the stored state and the new one. docs/events.md is the contract;
/// each rule below says when its event fires and which facts make its id.
struct EventDetector {
    let stored: SubscriptionState
    let new: SubscriptionState
    /// This subscription's entries, in purchase order.
    let entries: [ReceiptTransaction]
    let resubscription: ReceiptTransaction?
    let products: ProductCatalog

    var events: [SubscriptionEvent] {
        let all = periodEvents + refunds + renewalPreferenceEvents + billingEvents + expiry
        // Oldest first; events of one moment keep the order above.
        return all.enumerated()
            .sorted { ($0.element.occurredAt, $0.offset) < ($1.element.occurredAt, $1.offset) }
            .map(\.element)
    }

    private var otid: String { new.originalTransactionID }

    private func event(
        _ type: SubscriptionEventType, facts: [String?], at occurredAt: Instant?, _ payload: [String: JSONValue]
    ) -> SubscriptionEvent {
        SubscriptionEvent(type, originalTransactionID: otid, identifyingFacts: facts,
                          occurredAt: occurredAt ?? new.verifiedAt, payload: payload)
    }

    // MARK: New periods: renewed, resubscribed, plan_changed, trial_converted

    /// One paid period as the rules compare them: an entry, or the stored state's latest one.
    fileprivate struct Period {
        var transactionID: String?, productID: String?, expiresAt: Instant?, isTrial: Bool?, isUpgraded: Bool?
    }

    private var periodEvents: [SubscriptionEvent] {
        var events: [SubscriptionEvent] = []
        for (index, entry) in entries.enumerated() {
            let predecessor = index > 0 ? Period(entries[index - 1]) : storedPeriod
            guard isNew(entry, after: predecessor) else { continue }
            let facts = [entry.transactionID]
            if entry.transactionID == resubscription?.transactionID {
                events.append(event(.resubscribed, facts: facts, at: entry.purchaseDate, periodPayload(entry) + [
                    "chain_started_at": JSONValue(entry.purchaseDate),
                    "previous_expires_at": JSONValue(stored.expiresAt),
                    "previous_status": .string(stored.status.rawValue),
                ]))
            } else if predecessor.isUpgraded == true {
                events.append(planChanged(entry, from: predecessor, kind: .upgrade, basis: "is_upgraded"))
            } else if isImmediateChange(entry, from: predecessor) {
                events.append(planChanged(entry, from: predecessor))
            } else {
                events.append(event(.renewed, facts: facts, at: entry.purchaseDate, periodPayload(entry) + [
                    "previous_transaction_id": JSONValue(predecessor.transactionID),
                    "previous_expires_at": JSONValue(predecessor.expiresAt),
                ]))
                if changesProduct(entry, from: predecessor) {
                    events.append(planChanged(entry, from: predecessor))
                }
                if predecessor.isTrial == true, entry.isTrialPeriod != true {
                    events.append(event(.trialConverted, facts: facts, at: entry.purchaseDate, periodPayload(entry) + [
                        "trial_transaction_id": JSONValue(predecessor.transactionID),
                    ]))
                }
            }
        }
        return events
    }

    /// The stored latest period, from the response when it still lists it (which adds is_upgraded).
    private var storedPeriod: Period {
        if let entry = entries.first(where: { $0.transactionID == stored.latestTransactionID }) { return Period(entry) }
        return Period(transactionID: stored.latestTransactionID, productID: stored.productID,
                      expiresAt: stored.expiresAt, isTrial: stored.isTrial, isUpgraded: nil)
    }

    /// Whether `entry` came after the stored latest transaction: bought later, and ending later,
    /// or changing the plan (an upgrade to a shorter period may end sooner than the one it replaced).
    private func isNew(_ entry: ReceiptTransaction, after predecessor: Period) -> Bool {
        guard entry.transactionID != stored.latestTransactionID else { return false }
        if let purchased = entry.purchaseDate, let storedPurchase = stored.purchasedAt {
            guard purchased > storedPurchase else { return false }
            if predecessor.isUpgraded == true || changesProduct(entry, from: predecessor) { return true }
        }
        guard let expires = entry.expiresDate, let storedExpiry = stored.expiresAt else { return false }
        return expires > storedExpiry
    }

    private func changesProduct(_ entry: ReceiptTransaction, from predecessor: Period) -> Bool {
        guard let from = predecessor.productID, let to = entry.productID else { return false }
        return from != to
    }

    /// A change that took effect before the previous period ended: an upgrade, or a crossgrade
    /// between periods of one length. Changes at renewal start when the previous period ends.
    private func isImmediateChange(_ entry: ReceiptTransaction, from predecessor: Period) -> Bool {
        guard let purchased = entry.purchaseDate, let previousEnd = predecessor.expiresAt else { return false }
        return purchased < previousEnd && changesProduct(entry, from: predecessor)
    }

    /// A plan change whose direction comes from the catalog; without levels for both products the
    /// direction is unknown and reported as a crossgrade with `kind_basis` "unknown".
    private func planChanged(_ entry: ReceiptTransaction, from predecessor: Period) -> SubscriptionEvent {
        var kind: PlanChangeKind?
        if let from = predecessor.productID, let to = entry.productID { kind = products.kind(from: from, to: to) }
        return planChanged(entry, from: predecessor, kind: kind ?? .crossgrade,
                           basis: kind == nil ? "unknown" : "catalog")
    }

    private func planChanged(
        _ entry: ReceiptTransaction, from predecessor: Period, kind: PlanChangeKind, basis: String
    ) -> SubscriptionEvent {
        event(.planChanged, facts: [entry.transactionID], at: entry.purchaseDate, [
            "transaction_id": .string(entry.transactionID),
            "from_product_id": JSONValue(predecessor.productID), "to_product_id": JSONValue(entry.productID),
            "kind": .string(kind.rawValue), "kind_basis": .string(basis),
            "effective_at": JSONValue(entry.purchaseDate),
        ])
    }

    private func periodPayload(_ entry: ReceiptTransaction) -> [String: JSONValue] {
        [
            "transaction_id": .string(entry.transactionID), "product_id": JSONValue(entry.productID),
            "purchased_at": JSONValue(entry.purchaseDate), "expires_at": JSONValue(entry.expiresDate),
            "is_trial": JSONValue(entry.isTrialPeriod), "is_intro_offer": JSONValue(entry.isInIntroOfferPeriod),
        ]
    }

    // MARK: refunded

    /// Refunds the stored state could not have known: of its latest transaction when it recorded
    /// none, of a transaction new since, or made after the stored verification.
    private var refunds: [SubscriptionEvent] {
        entries.compactMap { entry in
            guard entry.isRefunded, let cancelledAt = entry.cancellationDate else { return nil }
            guard !refundWasKnown(entry, cancelledAt: cancelledAt) else { return nil }
            return event(.refunded, facts: [entry.transactionID], at: cancelledAt, [
                "transaction_id": .string(entry.transactionID), "product_id": JSONValue(entry.productID),
                "purchased_at": JSONValue(entry.purchaseDate), "expires_at": JSONValue(entry.expiresDate),
                "cancelled_at": JSONValue(cancelledAt),
                "cancellation_reason": JSONValue(entry.cancellationReason),
                "cancellation_reason_meaning": JSONValue(entry.cancellationReason.flatMap(cancellationReasonMeaning)),
            ])
        }
    }

    private func refundWasKnown(_ entry: ReceiptTransaction, cancelledAt: Instant) -> Bool {
        if entry.transactionID == stored.latestTransactionID { return stored.cancellation != nil }
        let boughtAfterStoredLatest = entry.purchaseDate.flatMap { bought in stored.purchasedAt.map { bought > $0 } }
        return boughtAfterStoredLatest != true && cancelledAt <= stored.verifiedAt
    }

    // MARK: auto_renew_enabled, auto_renew_disabled, plan_change_scheduled

    private var renewalPreferenceEvents: [SubscriptionEvent] {
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

    // MARK: billing_retry_started, grace_period_started, billing_recovered

    private var billingEvents: [SubscriptionEvent] {
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

    private var expiry: [SubscriptionEvent] {
        guard new.status == .expired,
              !stored.status.hasLapsed || new.latestTransactionID != stored.latestTransactionID
        else { return [] }
        return [event(.expired, facts: [new.latestTransactionID, new.expiresAt?.idFact], at: new.expiresAt, [
            "transaction_id": JSONValue(new.latestTransactionID), "product_id": JSONValue(new.productID),
            "expires_at": JSONValue(new.expiresAt), "auto_renew": JSONValue(new.autoRenew),
            "expiration_intent": JSONValue(new.expirationIntent),
            "expiration_reason": JSONValue(new.expirationIntent.flatMap(expirationIntentMeaning)),
        ])]
    }
}

extension EventDetector.Period {
    init(_ entry: ReceiptTransaction) {
        self.init(transactionID: entry.transactionID, productID: entry.productID, expiresAt: entry.expiresDate,
                  isTrial: entry.isTrialPeriod, isUpgraded: entry.isUpgraded)
    }
}

private func + (lhs: [String: JSONValue], rhs: [String: JSONValue]) -> [String: JSONValue] {
    lhs.merging(rhs) { _, new in new }
}
