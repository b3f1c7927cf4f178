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
        let all = periodEvents + extensions + refunds + reversals + renewalPreferenceEvents + priceConsent
            + offerRedemptions + billingEvents + expiry
        // Oldest first; events of one moment keep the order above.
        return all.enumerated()
            .sorted { ($0.element.occurredAt, $0.offset) < ($1.element.occurredAt, $1.offset) }
            .map(\.element)
    }

    /// An event of this subscription; `occurredAt` nil means Apple gives no date (the
    /// verification's is used). The payload gets the fields every event carries (`context`).
    func event(
        _ type: SubscriptionEventType, facts: [String?], at occurredAt: Instant?, _ payload: [String: JSONValue]
    ) -> SubscriptionEvent {
        SubscriptionEvent(type, originalTransactionID: new.originalTransactionID, identifyingFacts: facts,
                          occurredAt: occurredAt ?? new.verifiedAt, payload: Self.context(new, latest: latest) + payload)
    }

    /// The new state's latest entry, whose offer the events report.
    private var latest: ReceiptTransaction? { entries.first { $0.transactionID == new.latestTransactionID } }

    /// What consumers filter every event on: sandbox apart from revenue, family sharing apart from
    /// purchases, the subscription group, and the offer the customer is on.
    static func context(_ state: SubscriptionState, latest: ReceiptTransaction?) -> [String: JSONValue] {
        [
            "environment": JSONValue(state.environment?.rawValue), "ownership": JSONValue(state.ownership?.rawValue),
            "subscription_group_identifier": JSONValue(state.subscriptionGroupIdentifier),
            "is_trial": JSONValue(state.isTrial), "is_intro_offer": JSONValue(state.isIntroOffer),
            "offer_code_ref_name": JSONValue(latest?.offerCodeRefName),
            "promotional_offer_id": JSONValue(latest?.promotionalOfferID),
        ]
    }

    // MARK: New periods: renewed, resubscribed, plan_changed, trial_converted

    /// One paid period as the rules compare them: an entry, or the stored state's latest one.
    fileprivate struct Period {
        var transactionID: String?, productID: String?, expiresAt: Instant?, isTrial: Bool?
        /// Replaced by an upgrade; `flagged` when Apple said so with `is_upgraded`.
        var isSuperseded = false, flagged = false
    }

    private var periodEvents: [SubscriptionEvent] {
        var events: [SubscriptionEvent] = []
        for (index, entry) in entries.enumerated() {
            let predecessor = index > 0 ? Period(entries[index - 1]) : storedPeriod
            guard isNew(entry, after: predecessor) else { continue }
            // An entry an upgrade replaced is never a plan's new home, whatever Apple lists after it.
            if entry.isSuperseded, changesProduct(entry, from: predecessor) { continue }
            let facts = [entry.transactionID]
            if entry.transactionID == resubscription?.transactionID {
                events.append(event(.resubscribed, facts: facts, at: entry.purchaseDate, Self.periodPayload(entry) + [
                    "chain_started_at": JSONValue(entry.purchaseDate),
                    "previous_expires_at": JSONValue(stored.expiresAt),
                    "previous_status": .string(stored.status.rawValue),
                ]))
            } else if predecessor.isSuperseded {
                events.append(planChanged(
                    entry, from: predecessor, kind: .upgrade, basis: predecessor.flagged ? "is_upgraded" : "superseded"))
            } else if isImmediateChange(entry, from: predecessor) {
                events.append(planChanged(entry, from: predecessor))
            } else {
                events.append(event(.renewed, facts: facts, at: entry.purchaseDate, Self.periodPayload(entry) + [
                    "previous_transaction_id": JSONValue(predecessor.transactionID),
                    "previous_expires_at": JSONValue(predecessor.expiresAt),
                ]))
                if changesProduct(entry, from: predecessor) {
                    events.append(planChanged(entry, from: predecessor))
                }
                if predecessor.isTrial == true, entry.isTrialPeriod != true {
                    events.append(event(.trialConverted, facts: facts, at: entry.purchaseDate, Self.periodPayload(entry) + [
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
                      expiresAt: stored.expiresAt, isTrial: stored.isTrial)
    }

    /// Whether `entry` came after the stored latest transaction: bought later, and ending later,
    /// or changing the plan (an upgrade to a shorter period may end sooner than the one it replaced).
    private func isNew(_ entry: ReceiptTransaction, after predecessor: Period) -> Bool {
        guard entry.transactionID != stored.latestTransactionID else { return false }
        if let purchased = entry.purchaseDate, let storedPurchase = stored.purchasedAt {
            guard purchased > storedPurchase else { return false }
            if predecessor.isSuperseded || changesProduct(entry, from: predecessor) { return true }
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

    static func periodPayload(_ entry: ReceiptTransaction) -> [String: JSONValue] {
        [
            "transaction_id": .string(entry.transactionID), "product_id": JSONValue(entry.productID),
            "purchased_at": JSONValue(entry.purchaseDate), "expires_at": JSONValue(entry.expiresDate),
            "is_trial": JSONValue(entry.isTrialPeriod), "is_intro_offer": JSONValue(entry.isInIntroOfferPeriod),
            "offer_code_ref_name": JSONValue(entry.offerCodeRefName),
            "promotional_offer_id": JSONValue(entry.promotionalOfferID),
        ]
    }

    // MARK: initial_purchase

    /// A new customer's first purchase of the chain, seen at registration.
    static func initialPurchase(_ first: ReceiptTransaction, state: SubscriptionState) -> SubscriptionEvent {
        SubscriptionEvent(
            .initialPurchase, originalTransactionID: state.originalTransactionID, identifyingFacts: [first.transactionID],
            occurredAt: first.purchaseDate ?? state.verifiedAt,
            payload: context(state, latest: first) + periodPayload(first) + ["chain_started_at": JSONValue(state.chainStartedAt)])
    }

    // MARK: renewal_extended

    /// Apple moved the current period's end (RENEWAL_EXTENDED): the same transaction, a later expiry.
    private var extensions: [SubscriptionEvent] {
        guard let id = new.latestTransactionID, id == stored.latestTransactionID,
              let before = stored.expiresAt, let after = new.expiresAt, after > before
        else { return [] }
        return [event(.renewalExtended, facts: [id, after.idFact], at: nil, [
            "transaction_id": .string(id), "product_id": JSONValue(new.productID),
            "previous_expires_at": JSONValue(before), "expires_at": JSONValue(after),
        ])]
    }
}

extension EventDetector.Period {
    init(_ entry: ReceiptTransaction) {
        self.init(transactionID: entry.transactionID, productID: entry.productID, expiresAt: entry.expiresDate,
                  isTrial: entry.isTrialPeriod, isSuperseded: entry.isSuperseded, flagged: entry.isUpgraded == true)
    }
}

/// Two payloads in one; where both have a key, the right-hand one's value wins.
func + (lhs: [String: JSONValue], rhs: [String: JSONValue]) -> [String: JSONValue] {
    lhs.merging(rhs) { _, new in new }
}
