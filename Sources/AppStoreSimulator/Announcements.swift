/// What Apple announces when a subscription changes: the V2 notification types and subtypes for
/// the changes between two moments' answers, as the simulator's ground truth (`TwoLooks`) names
/// them, so that every change it counts is announced, and nothing else is.
struct Announcements {
    let before: ChainSnapshot?
    let after: ChainSnapshot
    let at: Int64
    let ownership: Ownership

    /// Each notification's type, subtype and the position of the transaction it carries.
    var notifications: [(type: String, subtype: String?, position: Int)] {
        let latest = after.transactions.count - 1
        guard let before else { return [("SUBSCRIBED", "INITIAL_BUY", latest)] }
        let changes = Set(TwoLooks(before: before, after: after, listed: after.transactions, lookMs: at).events.map(\.type))
        var found: [(String, String?, Int)] = []
        func announce(_ type: String, _ subtype: String? = nil, _ position: Int = latest) { found.append((type, subtype, position)) }

        if changes.contains("resubscribed") {
            announce("SUBSCRIBED", "RESUBSCRIBE")
        } else if changes.contains("renewed") || changes.contains("billing_recovered") {
            announce("DID_RENEW", changes.contains("billing_recovered") ? "BILLING_RECOVERY" : nil)
        } else if changes.contains("plan_changed") {
            announce("DID_CHANGE_RENEWAL_PREF", "UPGRADE")
        }
        if changes.contains("plan_change_scheduled") { announce("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE") }
        // An expiry or a refund turns auto-renew off by itself, and a resubscription on: their own
        // notification (with the renewal info) tells both, as Apple's does.
        if changes.contains("auto_renew_disabled"), !changes.contains("expired"), !changes.contains("refunded") {
            announce("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED")
        }
        if changes.contains("auto_renew_enabled"), !changes.contains("resubscribed") {
            announce("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED")
        }
        if changes.contains("refunded"), let refunded = after.transactions.lastIndex(where: { $0.cancellationMs != nil && !$0.isUpgraded }) {
            // A family member loses access when the purchaser is refunded: Apple revokes it.
            announce(ownership == .familyShared ? "REVOKE" : "REFUND", nil, refunded)
        }
        if changes.contains("refund_reversed") { announce("REFUND_REVERSED") }
        if changes.contains("renewal_extended") { announce("RENEWAL_EXTENDED") }
        if changes.contains("offer_redeemed") { announce("OFFER_REDEEMED") }
        if changes.contains("price_increase_consent"), let consent = after.renewal.priceConsentStatus {
            announce("PRICE_INCREASE", consent == 1 ? "ACCEPTED" : "PENDING")
        }
        if changes.contains("billing_retry_started") {
            announce("DID_FAIL_TO_RENEW", changes.contains("grace_period_started") ? "GRACE_PERIOD" : nil)
        }
        if changes.contains("grace_period_ended") { announce("GRACE_PERIOD_EXPIRED") }
        if changes.contains("expired") {
            let subtype = switch after.renewal.expirationIntent {
            case 2: "BILLING_RETRY"
            case 3: "PRICE_INCREASE"
            default: "VOLUNTARY"
            }
            announce("EXPIRED", subtype)
        }
        return found
    }

    /// Every moment at which `script`'s answers may change, up to `endMs`: purchases, expiries,
    /// refunds and the ends of grace and billing retry, and each of the script's twists.
    static func moments(of script: ChainScript, _ timeline: Timeline, until endMs: Int64) -> [Int64] {
        guard let last = timeline.snapshot(at: endMs - 1) else { return [] }
        let time = timeline.time
        var moments: Set<Int64> = [script.start]
        for transaction in last.transactions {
            moments.formUnion([transaction.purchaseMs, transaction.expiresMs, transaction.expiresMs + time.grace,
                               transaction.expiresMs + time.billingRetry])
            if let cancelled = transaction.cancellationMs { moments.insert(cancelled) }
        }
        let twists: [Int64?] = [
            script.autoRenewOffAt, script.refund?.at, script.refund.flatMap { refund in script.refundReversedAfter.map { refund.at + $0 } },
            script.upgrade?.at, script.planChange?.at, script.priceIncrease?.askedAt,
            script.priceIncrease.flatMap { increase in increase.agreesAfter.map { increase.askedAt + $0 } },
            script.earlierRefund.map { $0.at + $0.shownAfter }, script.offerRedeemedAt,
        ]
        moments.formUnion(twists.compactMap { $0 })
        moments.formUnion(script.renewalExtensions.map(\.at))
        return moments.filter { $0 < endMs }.sorted()
    }
}
