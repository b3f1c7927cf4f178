/// Where a receipt was issued, spelled as Apple spells it in `environment`.
public enum SimulatedEnvironment: String, Sendable, Codable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
}

/// The story a simulated receipt tells over time. Receipt indices cycle through these in order, so any
/// fleet of at least `allCases.count` receipts holds every kind.
public enum LifecycleKind: String, Sendable, Codable, CaseIterable {
    /// Monthly, renewing for ever.
    case renewing
    /// Renewing, then the customer turns auto-renew off; it expires at the period's end (intent 1).
    case autoRenewOff = "auto_renew_off"
    /// Apple refunds the current period (cancellation_reason 0 or 1); the subscription ends there.
    case refunded
    /// A renewal fails, grace period, then billing retry, then the charge goes through.
    case billingRecovered = "billing_recovered"
    /// A renewal fails without grace; billing retry gives up and it expires (intent 2).
    case billingExpired = "billing_expired"
    /// Mid-period upgrade to a higher level: the old entry is marked `is_upgraded`, the new plan starts at once.
    case upgrade
    /// A downgrade or crossgrade scheduled for the next renewal (`auto_renew_product_id` differs until then).
    case planChange = "plan_change"
    /// A free trial that converts to paid months.
    case trialConversion = "trial_conversion"
    /// Renewing, used by a family member (`in_app_ownership_type` FAMILY_SHARED).
    case familyShared = "family_shared"
    /// A sandbox receipt: 5-minute months, at most six renewals (production answers 21007).
    case sandbox
    /// Auto-renew off, a lapse, then a re-subscription that reuses the original_transaction_id.
    case resubscribed
    /// Apple cannot read this receipt: always 21002.
    case malformed
    /// The customer's account is gone: always 21010.
    case deletedAccount = "deleted_account"
    /// Two subscription groups on one receipt: one renewing, one switched off.
    case twoGroups = "two_groups"
    /// Apple refunds the current period, then reverses the refund a few days later: active again.
    case refundReversed = "refund_reversed"
    /// Apple moves the current period's end later (RENEWAL_EXTENDED): the same transaction, a later expiry.
    case renewalExtended = "renewal_extended"
    /// A price increase awaits consent (`price_consent_status` 0); the customer agrees (1) in time, or
    /// does not and the subscription expires at the period's end (intent 3).
    case priceIncrease = "price_increase"
    /// Apple refunds the month before the current one and shows it only days later; the subscription
    /// renews on.
    case lateRefund = "late_refund"
    /// A lifetime non-consumable (no expiry), beside a monthly subscription or alone on the receipt,
    /// refunded on some receipts (`SimulatedLifetimePurchase`).
    case lifetimePurchase = "lifetime_purchase"
    /// Renewing; the customer redeems an offer code (OFFER_REDEEMED): the renewal info names it
    /// until the next renewal, which is bought with it.
    case offerRedeemed = "offer_redeemed"

    /// The kind of the receipt at `index` in a seeded fleet.
    public static func at(index: Int) -> LifecycleKind {
        allCases[index % allCases.count]
    }

    /// Where receipts of this kind are issued.
    public var environment: SimulatedEnvironment {
        self == .sandbox ? .sandbox : .production
    }
}

/// A subscription's state as an analysis of Apple's answers should conclude it.
public enum SubscriptionStatus: String, Sendable, Codable, CaseIterable {
    case active
    case inGrace = "in_grace"
    case inBillingRetry = "in_billing_retry"
    case expired
    case refunded
    /// Apple answers 21002 or 21010 for the receipt (or it was not issued yet at that time).
    case invalid
}

/// Whether the customer bought the subscription or a family member shares it.
public enum Ownership: String, Sendable, Codable {
    case purchased = "PURCHASED"
    case familyShared = "FAMILY_SHARED"
}
