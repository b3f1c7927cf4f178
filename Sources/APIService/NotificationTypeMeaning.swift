/// What Apple says a notification type means, for whoever reads the `notifications` table later.
/// V1 and V2 name the types they share the same way. Every type is handled alike (the
/// subscription it names is re-verified, and verifyReceipt says what changed), so this is for
/// people; unknown types have no meaning rather than a guessed one.
func notificationTypeMeaning(_ type: String) -> String? {
    switch type {
    // V2, and V1 where the names are shared.
    case "CONSUMPTION_REQUEST": "the customer asked for a refund; Apple asks for consumption data"
    case "DID_CHANGE_RENEWAL_PREF": "the customer chose another product to renew into (upgrade, downgrade or crossgrade)"
    case "DID_CHANGE_RENEWAL_STATUS": "the customer turned auto-renew on or off"
    case "DID_FAIL_TO_RENEW": "a renewal failed on billing; Apple retries (in a grace period if the app has one)"
    case "DID_RENEW": "the subscription renewed"
    case "EXPIRED": "the subscription expired"
    case "EXTERNAL_PURCHASE_TOKEN": "an external purchase token has no report yet"
    case "GRACE_PERIOD_EXPIRED": "the billing grace period ended without a renewal; access ends while Apple still retries"
    case "OFFER_REDEEMED": "the customer redeemed an offer"
    case "ONE_TIME_CHARGE": "the customer bought something other than an auto-renewable subscription"
    case "PRICE_INCREASE": "Apple told the customer of a price increase (the subtype says whether they accepted)"
    case "REFUND": "Apple refunded a transaction; access to what it bought is revoked"
    case "REFUND_DECLINED": "Apple declined a refund the customer asked for; nothing changes"
    case "REFUND_REVERSED": "Apple reversed a refund; the subscription's access is restored"
    case "RENEWAL_EXTENDED": "Apple extended the subscription's renewal date"
    case "RENEWAL_EXTENSION": "an extension of renewal dates for many subscribers ran (the subtype says how it ended)"
    case "REVOKE": "access through Family Sharing ended"
    case "SUBSCRIBED": "the customer subscribed or resubscribed"
    case "TEST": "a test asked for through the App Store Server API; about no subscription"
    // V1 only.
    case "CANCEL": "Apple Support refunded the transaction, or the customer upgraded; access through it ends"
    case "DID_RECOVER": "a subscription that had failed to renew was charged and renewed"
    case "INITIAL_BUY": "the customer's first purchase of the subscription"
    case "INTERACTIVE_RENEWAL": "the customer resubscribed, or upgraded, in the app or the App Store"
    case "PRICE_INCREASE_CONSENT": "Apple asked the customer to accept a price increase"
    case "RENEWAL": "an expired subscription that had failed to renew was renewed (superseded by DID_RECOVER)"
    default: nil
    }
}
