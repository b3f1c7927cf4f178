import AppStore

/// What docs/events.md says each event does to a subscription's product, status and auto-renew,
/// applied one event after another from a baseline: the model the analysis is held to.
struct EventReplay: Equatable, CustomStringConvertible {
    var productID: String?
    var status: SubscriptionStatus
    var autoRenew: Bool?
    /// The current period's transaction: a refund of another one leaves the status alone.
    var transactionID: String?

    init(_ state: SubscriptionState) {
        productID = state.productID
        status = state.status
        autoRenew = state.autoRenew
        transactionID = state.latestTransactionID
    }

    /// The fields a replay can be compared on.
    init(comparing state: SubscriptionState) {
        self.init(state)
        transactionID = nil
    }

    var compared: EventReplay {
        var fields = self
        fields.transactionID = nil
        return fields
    }

    mutating func apply(_ event: SubscriptionEvent) {
        let text = { (key: String) -> String? in
            if case .string(let value) = event.payload[key] { value } else { nil }
        }
        switch event.type {
        case .renewed, .resubscribed, .initialPurchase, .billingRecovered:
            (productID, status, transactionID) = (text("product_id"), .active, text("transaction_id"))
        case .planChanged:
            (productID, status, transactionID) = (text("to_product_id"), .active, text("transaction_id"))
        case .refunded:
            if text("transaction_id") == transactionID { status = .refunded }
        case .refundReversed, .gracePeriodEnded:
            status = text("status").flatMap(SubscriptionStatus.init(rawValue:)) ?? status
        case .autoRenewDisabled: autoRenew = false
        case .autoRenewEnabled: autoRenew = true
        case .billingRetryStarted: status = .inBillingRetry
        case .gracePeriodStarted: status = .inGrace
        case .expired: status = .expired
        case .verificationFailed: status = .invalid
        case .planChangeScheduled, .trialConverted, .renewalExtended, .priceIncreaseConsent, .offerRedeemed: break
        case .nonRenewingPurchase: break  // about a one-time purchase, never a subscription
        case .subscriptionForgotten, .purchaseForgotten: break  // the ledger's, never the analysis's
        }
    }

    var description: String { "\(productID ?? "-") \(status.rawValue) auto-renew \(autoRenew.map(String.init) ?? "-")" }
}
