import Foundation

/// The one-time purchases a verifyReceipt response holds, read apart from its subscriptions: every
/// transaction without `expires_date` (non-consumables, non-renewing subscriptions), or of a product
/// the deployment names as non-renewing. `SubscriptionAnalyzer` lists their ids among the receipt's
/// other purchases and never analyses them.
public struct OneTimePurchases: Sendable, Equatable {
    /// Oldest purchase first.
    public let purchases: [Purchase]
    /// The moment Apple judged the receipt (its `request_date`): what the purchases say is true
    /// then, so the ledger stamps their last verification with it, as it does a subscription's.
    /// nil when the answer carries none.
    public let readAt: Instant?

    /// Reads `response`; an error status holds no purchases.
    /// - Parameter nonRenewingProductIDs: products sold as non-renewing subscriptions, whose
    ///   entries carry an `expires_date` of the app's own making.
    public init(_ response: VerifyReceiptResponse, nonRenewingProductIDs: Set<String> = []) {
        readAt = response.receipt?.requestDate
        guard response.status == 0 || response.status == 21006 else {
            purchases = []
            return
        }
        let environment = response.effectiveEnvironment
        purchases = response.allTransactions
            .filter { Self.isOneTime($0, nonRenewingProductIDs: nonRenewingProductIDs) }
            .sorted(by: SubscriptionAnalyzer.purchaseOrder)
            .map { entry in
                Purchase(
                    transactionID: entry.transactionID, originalTransactionID: entry.originalTransactionID,
                    productID: entry.productID, purchasedAt: entry.purchaseDate, quantity: entry.quantity,
                    ownership: entry.ownershipType, environment: environment,
                    cancellation: entry.cancellationDate.map { Cancellation(cancelledAt: $0, reason: entry.cancellationReason) })
            }
    }

    /// Whether `entry` is a one-time purchase rather than a period of an auto-renewable subscription.
    public static func isOneTime(_ entry: ReceiptTransaction, nonRenewingProductIDs: Set<String>) -> Bool {
        entry.expiresDate == nil || entry.productID.map(nonRenewingProductIDs.contains) == true
    }

    public var transactionIDs: [String] { purchases.map(\.transactionID) }

    /// The original_transaction_ids of the auto-renewable subscriptions in `response`: those with
    /// an entry that is not a one-time purchase.
    public static func subscriptionIDs(in response: VerifyReceiptResponse, nonRenewingProductIDs: Set<String> = []) -> [String] {
        let entries = response.allTransactions.filter { !isOneTime($0, nonRenewingProductIDs: nonRenewingProductIDs) }
        return Set(entries.map(\.originalTransactionID)).sorted()
    }

    /// After when a purchase the ledger lacks is news: the fleet's last reading of the receipt
    /// (`stored`, the state a subscription on it was left in), or for a registration the start of
    /// `registrationWindow` before Apple's answer; the earlier of the two. nil (a first sight that is
    /// no registration, such as a bulk import's first night) announces nothing.
    public static func announcingAfter(
        _ response: VerifyReceiptResponse, stored: SubscriptionState?, registrationWindow: TimeInterval?, now: Date
    ) -> Instant? {
        let answered = response.receipt?.requestDate ?? Instant(now)
        let lastReading = stored?.latestTransactionID == nil ? nil : stored?.verifiedAt
        let windowStart = registrationWindow.map { Instant(answered.date.addingTimeInterval(-$0)) }
        return [lastReading, windowStart].compactMap { $0 }.min()
    }

    /// Compares these purchases with what the ledger stored of them (by transaction id).
    ///
    /// A purchase the ledger never had is a baseline, like a subscription's first sight, unless it
    /// was bought after `announcingPurchasesAfter`: then it is news, `non_renewing_purchase`
    /// (callers pass the time the fleet last read this receipt, or at registration the start of the
    /// initial-purchase window; nil announces nothing). `refunded` fires for a refund the stored
    /// purchase did not have, and for an announced purchase that is refunded already.
    public func analyze(stored: [Purchase], announcingPurchasesAfter: Instant?) -> PurchaseAnalysis {
        let known = Dictionary(stored.map { ($0.transactionID, $0) }, uniquingKeysWith: { first, _ in first })
        var events: [SubscriptionEvent] = []
        for purchase in purchases {
            let previous = known[purchase.transactionID]
            let announced = previous == nil && announcingPurchasesAfter.map { after in
                purchase.purchasedAt.map { $0 > after } == true
            } == true
            if announced, let purchasedAt = purchase.purchasedAt {
                events.append(Self.event(.nonRenewingPurchase, purchase, at: purchasedAt, [:]))
            }
            if let cancellation = purchase.cancellation, previous?.cancellation == nil, previous != nil || announced {
                events.append(Self.event(.refunded, purchase, at: cancellation.cancelledAt, [
                    "expires_at": .null,
                    "cancelled_at": JSONValue(cancellation.cancelledAt),
                    "cancellation_reason": JSONValue(cancellation.reason),
                    "cancellation_reason_meaning": JSONValue(cancellation.reason.flatMap(cancellationReasonMeaning)),
                ]))
            }
        }
        return PurchaseAnalysis(purchases: purchases, events: events.sorted { $0.occurredAt < $1.occurredAt })
    }

    /// An event about one purchase. Its id is derived like every event's, from the purchase's
    /// original_transaction_id, the type and its transaction_id, so finding it twice gives one id.
    private static func event(
        _ type: SubscriptionEventType, _ purchase: Purchase, at occurredAt: Instant, _ fields: [String: JSONValue]
    ) -> SubscriptionEvent {
        // The fields every payload carries (docs/events.md); the subscription-only ones are null.
        let context: [String: JSONValue] = [
            "environment": JSONValue(purchase.environment?.rawValue), "ownership": JSONValue(purchase.ownership?.rawValue),
            "subscription_group_identifier": .null, "is_trial": .null, "is_intro_offer": .null,
            "offer_code_ref_name": .null, "promotional_offer_id": .null,
        ]
        let purchaseFields: [String: JSONValue] = [
            "transaction_id": .string(purchase.transactionID), "product_id": JSONValue(purchase.productID),
            "purchased_at": JSONValue(purchase.purchasedAt), "quantity": JSONValue(purchase.quantity),
        ]
        return SubscriptionEvent(
            type, originalTransactionID: purchase.originalTransactionID, identifyingFacts: [purchase.transactionID],
            occurredAt: occurredAt,
            payload: context + purchaseFields + fields)
    }
}

/// What one verification means for a receipt's one-time purchases.
public struct PurchaseAnalysis: Sendable, Equatable {
    /// The purchases as they stand now: store them in place of the old ones.
    public var purchases: [Purchase]
    /// What changed since the stored purchases, oldest first.
    public var events: [SubscriptionEvent]
}
