import Crypto

/// The kinds of change the fleet announces (about subscriptions, and `refunded` and
/// `non_renewing_purchase` also about one-time purchases); docs/events.md describes each one and its payload.
public enum SubscriptionEventType: String, Sendable, Codable, CaseIterable {
    case renewed
    case refunded
    case autoRenewDisabled = "auto_renew_disabled"
    case autoRenewEnabled = "auto_renew_enabled"
    case planChangeScheduled = "plan_change_scheduled"
    case planChanged = "plan_changed"
    case billingRetryStarted = "billing_retry_started"
    case gracePeriodStarted = "grace_period_started"
    case billingRecovered = "billing_recovered"
    case expired
    case resubscribed
    case trialConverted = "trial_converted"
    case verificationFailed = "verification_failed"
    case refundReversed = "refund_reversed"
    case renewalExtended = "renewal_extended"
    case gracePeriodEnded = "grace_period_ended"
    case initialPurchase = "initial_purchase"
    case priceIncreaseConsent = "price_increase_consent"
    case offerRedeemed = "offer_redeemed"
    /// A one-time purchase (non-consumable or non-renewing subscription); see `OneTimePurchases`.
    case nonRenewingPurchase = "non_renewing_purchase"
    /// The subscription's data was deleted (`Ledger.forget`): its tombstone, for consumers to do the same.
    case subscriptionForgotten = "subscription_forgotten"
    /// The one-time purchase's data was deleted with its account's.
    case purchaseForgotten = "purchase_forgotten"
}

/// One change to one subscription, for the outbox and its consumers.
///
/// `id` is derived from the facts that identify the occurrence, never from the time of analysis:
/// finding the same change twice yields the same id, so consumers de-duplicate by id.
public struct SubscriptionEvent: Sendable, Codable, Equatable {
    public var id: String
    public var type: SubscriptionEventType
    public var originalTransactionID: String
    /// When it happened by Apple's dates; the verification time when Apple gives none.
    public var occurredAt: Instant
    /// A JSON object; its fields per type are listed in docs/events.md.
    public var payload: JSONValue

    /// An event whose id is derived from `type`, `originalTransactionID` and `identifyingFacts`.
    init(
        _ type: SubscriptionEventType, originalTransactionID: String, identifyingFacts: [String?],
        occurredAt: Instant, payload: [String: JSONValue]
    ) {
        id = Self.id(type: type, originalTransactionID: originalTransactionID, facts: identifyingFacts)
        self.type = type
        self.originalTransactionID = originalTransactionID
        self.occurredAt = occurredAt
        self.payload = .object(payload)
    }

    /// A UUID-formatted id (RFC 9562 version 8, "custom") made of the first 128 bits of
    /// SHA-256("receiptfleet-event-v1", original_transaction_id, type, facts...), the parts
    /// separated by U+001F so that no two lists of parts hash the same text. A missing fact is
    /// the empty string.
    static func id(type: SubscriptionEventType, originalTransactionID: String, facts: [String?]) -> String {
        let parts = ["receiptfleet-event-v1", originalTransactionID, type.rawValue] + facts.map { $0 ?? "" }
        var bytes = Array(SHA256.hash(data: Array(parts.joined(separator: "\u{1F}").utf8)).prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x80  // version 8
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 9562 variant
        let hex = bytes.hex
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return groups.joined(separator: "-")
    }

    enum CodingKeys: String, CodingKey {
        case id, type
        case originalTransactionID = "original_transaction_id"
        case occurredAt = "occurred_at"
        case payload
    }
}

extension Instant {
    /// The text an instant contributes to an event id.
    var idFact: String { String(millisecondsSince1970) }
}
