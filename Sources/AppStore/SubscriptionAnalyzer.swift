import Foundation

/// What one verification means for one subscription.
public struct Analysis: Sendable, Equatable {
    /// The subscription as it stands now: store it in place of the old state.
    public var state: SubscriptionState
    /// Every transaction of this subscription in the response, oldest purchase first.
    public var transactions: [TransactionRecord]
    /// What changed since the stored state, oldest first.
    public var events: [SubscriptionEvent]
    /// Other subscriptions (and other purchases) the same receipt holds, not analysed here.
    public var otherOriginalTransactionIDs: [String]
}

/// Why a response could not be analysed for a subscription.
public enum AnalysisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Only statuses 0 and 21006 carry a decoded receipt; ask `StatusPolicy` about the others.
    case notAValidReceipt(status: Int)
    /// The receipt holds no transaction of this subscription. `found` lists the
    /// original_transaction_ids it does hold.
    case subscriptionNotInReceipt(originalTransactionID: String, found: [String])

    public var description: String {
        switch self {
        case .notAValidReceipt(let status):
            "verifyReceipt status \(status) carries no receipt to analyse; act on it with StatusPolicy"
        case .subscriptionNotInReceipt(let id, let found):
            "the receipt holds no transaction with original_transaction_id \(id) (it holds: "
                + "\(found.isEmpty ? "none" : found.joined(separator: ", "))); the stored receipt "
                + "belongs to another subscription"
        }
    }
}

/// The product's knowledge: from a verifyReceipt response and the stored state to the new state,
/// the transactions and the events. Pure: no I/O, no clock (`now` is a parameter).
public enum SubscriptionAnalyzer {
    /// Analyses `response` for the subscription `originalTransactionID`.
    ///
    /// The state is judged at the moment Apple judged it, the receipt's `request_date`, and
    /// stamped with that moment as `verifiedAt`: the answer describes Apple's records then, and a
    /// period that ended while the answer travelled (sandbox months last minutes) must not make a
    /// renewed subscription look expired. `now` stands in only when Apple gives no request date.
    ///
    /// With no stored state (first sight) the result is a baseline and carries no events: what
    /// the fleet had not seen cannot be told apart from what changed. The one exception is a
    /// purchase the customer has just made: with `announcingPurchasesWithin`, a chain that began
    /// less than that long before Apple's answer is announced as `initial_purchase` (registrations
    /// pass it; imports and restores, whose chains are older, stay silent).
    public static func analyze(
        stored: SubscriptionState?, response: VerifyReceiptResponse, originalTransactionID: String,
        now: Date, products: ProductCatalog = .none, announcingPurchasesWithin: TimeInterval? = nil
    ) throws(AnalysisError) -> Analysis {
        guard response.status == 0 || response.status == 21006 else {
            throw .notAValidReceipt(status: response.status)
        }
        let all = response.allTransactions
        let entries = ReceiptTransaction.markingSuperseded(
            all.filter { $0.originalTransactionID == originalTransactionID }.sorted(by: purchaseOrder))
        let others = Set(all.map(\.originalTransactionID)).subtracting([originalTransactionID]).sorted()
        guard let latest = latestEntry(of: entries) else {
            throw .subscriptionNotInReceipt(originalTransactionID: originalTransactionID, found: others)
        }
        let renewal = response.pendingRenewalInfo.first { $0.originalTransactionID == originalTransactionID }
        let verifiedAt = response.receipt?.requestDate ?? Instant(now)
        // A stored state without a latest transaction never saw this subscription's receipt.
        let previous = stored?.latestTransactionID == nil ? nil : stored
        let resubscription = previous.flatMap { firstPurchaseAfterLapse(of: $0, in: entries) }

        var state = SubscriptionState(
            originalTransactionID: originalTransactionID,
            status: status(of: latest, renewal: renewal, at: verifiedAt), verifiedAt: verifiedAt)
        state.productID = latest.productID
        state.latestTransactionID = latest.transactionID
        state.purchasedAt = latest.purchaseDate
        state.expiresAt = latest.expiresDate
        state.autoRenew = renewal?.autoRenewStatus
        state.autoRenewProductID = renewal?.autoRenewProductID
        state.expirationIntent = renewal?.expirationIntent
        state.gracePeriodExpiresAt = renewal?.gracePeriodExpiresDate
        state.isTrial = latest.isTrialPeriod
        state.isIntroOffer = latest.isInIntroOfferPeriod
        state.environment = response.effectiveEnvironment
        state.ownership = latest.ownershipType
        state.chainStartedAt = resubscription?.purchaseDate ?? stored?.chainStartedAt ?? firstPurchase(of: entries)
        state.cancellation = latest.isRefunded
            ? latest.cancellationDate.map { Cancellation(cancelledAt: $0, reason: latest.cancellationReason) }
            : nil
        state.refundedTransactionIDs = refundedTransactionIDs(stored: previous, entries: entries)
        state.refundsReadAt = response.showsEveryRefund ? verifiedAt : stored?.refundsReadAt
        state.subscriptionGroupIdentifier = latest.subscriptionGroupIdentifier
            ?? entries.compactMap(\.subscriptionGroupIdentifier).last ?? stored?.subscriptionGroupIdentifier
        state.priceConsentStatus = renewal?.priceConsentStatus
        (state.renewalOfferCodeRefName, state.renewalPromotionalOfferID) = (renewal?.offerCodeRefName, renewal?.promotionalOfferID)
        state.latestReceipt = response.latestReceipt ?? stored?.latestReceipt

        let events: [SubscriptionEvent]
        if let previous {
            events = EventDetector(
                stored: previous, new: state, entries: entries, resubscription: resubscription, products: products
            ).events
        } else if let window = announcingPurchasesWithin, let started = state.chainStartedAt,
                  verifiedAt.date.timeIntervalSince(started.date) < window,
                  let first = entries.first
        {
            events = [EventDetector.initialPurchase(first, state: state)]
        } else {
            events = []
        }
        return Analysis(
            state: state, transactions: entries.map(TransactionRecord.init), events: events,
            otherOriginalTransactionIDs: others)
    }

    /// The state and event for a verification that failed for good (a `.permanent` action):
    /// the subscription becomes `invalid`, keeping what was known about it. The
    /// `verification_failed` event fires once, when the subscription becomes invalid.
    /// - Parameters:
    ///   - reason: why, for people; `VerificationAction.permanent`'s reason. Never put secrets in it.
    ///   - status: Apple's status code, when Apple answered with one.
    public static func permanentFailure(
        stored: SubscriptionState?, originalTransactionID: String, reason: String, status: Int?, now: Date
    ) -> Analysis {
        let verifiedAt = Instant(now)
        var state = stored
            ?? SubscriptionState(originalTransactionID: originalTransactionID, status: .invalid, verifiedAt: verifiedAt)
        state.status = .invalid
        state.verifiedAt = verifiedAt
        state.invalidSince = stored?.status == .invalid ? stored?.invalidSince ?? verifiedAt : verifiedAt
        var events: [SubscriptionEvent] = []
        if stored?.status != .invalid {
            events.append(SubscriptionEvent(
                .verificationFailed, originalTransactionID: originalTransactionID,
                identifyingFacts: [status.map { String($0) }, stored?.verifiedAt.idFact],
                occurredAt: verifiedAt,
                payload: EventDetector.context(state, latest: nil) + [
                    "reason": .string(reason), "status": JSONValue(status),
                    "previous_status": JSONValue(stored?.status.rawValue),
                ]))
        }
        return Analysis(state: state, transactions: [], events: events, otherOriginalTransactionIDs: [])
    }

    /// Status at `now`, in order: refunded, active, in grace, in billing retry, expired.
    static func status(of latest: ReceiptTransaction, renewal: PendingRenewal?, at now: Instant) -> SubscriptionStatus {
        if latest.isRefunded { return .refunded }
        if let expires = latest.expiresDate, expires > now { return .active }
        guard renewal?.isInBillingRetryPeriod == true else { return .expired }
        if let graceEnds = renewal?.gracePeriodExpiresDate, graceEnds > now { return .inGrace }
        return .inBillingRetry
    }

    /// The entry that defines the subscription now: the greatest expiry (tie: the later purchase)
    /// among entries no upgrade superseded. Transaction ids say nothing about order.
    static func latestEntry(of entries: [ReceiptTransaction]) -> ReceiptTransaction? {
        let current = entries.filter { !$0.isSuperseded }
        return (current.isEmpty ? entries : current).max { periodKey($0) < periodKey($1) }
    }

    /// The first purchase of a lapsed subscription's new chain: the earliest entry bought after
    /// the stored state's access ended. The stored state may have lapsed since it was stored: a
    /// period with auto-renew off ends for good, and so does a refunded one, so a purchase after
    /// either starts a new chain too.
    static func firstPurchaseAfterLapse(of stored: SubscriptionState, in entries: [ReceiptTransaction]) -> ReceiptTransaction? {
        let refundedSince = entries.first { $0.transactionID == stored.latestTransactionID }.flatMap {
            $0.isRefunded ? $0.cancellationDate : nil
        }
        let lapses = stored.status.hasLapsed || refundedSince != nil || (stored.status == .active && stored.autoRenew == false)
        guard lapses, let expiresAt = stored.expiresAt else { return nil }
        let accessEnded = min(expiresAt, stored.cancellation?.cancelledAt ?? refundedSince ?? expiresAt)
        return entries.first { entry in
            entry.transactionID != stored.latestTransactionID && entry.purchaseDate.map { $0 > accessEnded } == true
        }
    }

    /// Every refunded transaction seen so far: those the stored state knew, less any Apple
    /// reversed since, and those refunded in this answer. Sorted, so equal sets store equally.
    static func refundedTransactionIDs(stored: SubscriptionState?, entries: [ReceiptTransaction]) -> [String] {
        var ids = stored.map { EventDetector.knownRefunds(of: $0) } ?? []
        if let stored { ids.subtract(EventDetector.reversedRefunds(of: stored, in: entries).map(\.transactionID)) }
        ids.formUnion(entries.filter(\.isRefunded).map(\.transactionID))
        return ids.sorted()
    }

    /// Where a chain seen for the first time began: Apple's original purchase date, which it keeps
    /// across lapses (so a lapse before first sight cannot be seen), else the earliest purchase.
    static func firstPurchase(of entries: [ReceiptTransaction]) -> Instant? {
        entries.compactMap(\.originalPurchaseDate).min() ?? entries.compactMap(\.purchaseDate).min()
    }

    static func purchaseOrder(_ a: ReceiptTransaction, _ b: ReceiptTransaction) -> Bool {
        (a.purchaseDate?.millisecondsSince1970 ?? -1, a.expiresDate?.millisecondsSince1970 ?? -1, a.transactionID)
            < (b.purchaseDate?.millisecondsSince1970 ?? -1, b.expiresDate?.millisecondsSince1970 ?? -1, b.transactionID)
    }

    /// Orders entries by when access through them ends: a refunded one ends at its refund (if the
    /// refund came before its expiry), so a purchase made after a refund defines the subscription
    /// even if the refunded period was longer.
    private static func periodKey(_ entry: ReceiptTransaction) -> (Int64, Int64, String) {
        let expires = entry.expiresDate?.millisecondsSince1970 ?? -1
        let refunded = entry.isRefunded ? entry.cancellationDate?.millisecondsSince1970 : nil
        return (min(expires, refunded ?? expires), entry.purchaseDate?.millisecondsSince1970 ?? -1, entry.transactionID)
    }
}
