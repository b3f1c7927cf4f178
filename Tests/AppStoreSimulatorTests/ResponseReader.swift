import AppStoreSimulator

/// What a careful client concludes from one verifyReceipt answer about one original_transaction_id.
/// Written from Apple's documentation, independently of the simulator's lifecycle code, so that the
/// answers and the ground truth check each other.
struct ReadState: Equatable, CustomStringConvertible {
    var status: SubscriptionStatus
    var productID: String?
    var expiresAtMs: Int64?
    var autoRenew: Bool?
    var autoRenewProductID: String?
    var expirationIntent: Int?
    var ownership: String?

    init(status: SubscriptionStatus, productID: String?, expiresAtMs: Int64?, autoRenew: Bool?,
         autoRenewProductID: String?, expirationIntent: Int?, ownership: String?) {
        self.status = status
        self.productID = productID
        self.expiresAtMs = expiresAtMs
        self.autoRenew = autoRenew
        self.autoRenewProductID = autoRenewProductID
        self.expirationIntent = expirationIntent
        self.ownership = ownership
    }

    init(_ truth: GroundTruth) {
        self.init(status: truth.status, productID: truth.productID, expiresAtMs: truth.expiresAtMs,
                  autoRenew: truth.autoRenew, autoRenewProductID: truth.autoRenewProductID,
                  expirationIntent: truth.expirationIntent, ownership: truth.ownership.rawValue)
    }

    var description: String {
        "\(status.rawValue) \(productID ?? "-") expires \(expiresAtMs.map(String.init) ?? "-") "
            + "auto \(autoRenew.map(String.init) ?? "-") → \(autoRenewProductID ?? "-") intent \(expirationIntent.map(String.init) ?? "-") \(ownership ?? "-")"
    }

    /// Reads the state from a status-0 answer, at `now` (ms).
    static func read(_ json: [String: Any], originalTransactionID: String, now: Int64) -> ReadState? {
        guard let entries = json["latest_receipt_info"] as? [[String: Any]],
            let renewals = json["pending_renewal_info"] as? [[String: Any]]
        else { return nil }
        let mine = entries.filter { $0["original_transaction_id"] as? String == originalTransactionID }
        // The entry with the latest expiry decides (tie: latest purchase); never transaction_id order.
        guard let entry = mine.max(by: { (ms($0, "expires_date_ms"), ms($0, "purchase_date_ms"))
                                          < (ms($1, "expires_date_ms"), ms($1, "purchase_date_ms")) }),
            let renewal = renewals.first(where: { $0["original_transaction_id"] as? String == originalTransactionID })
        else { return nil }
        let expires = ms(entry, "expires_date_ms")
        let retrying = renewal["is_in_billing_retry_period"] as? String == "1"
        let graceEnd = (renewal["grace_period_expires_date_ms"] as? String).flatMap { Int64($0) }
        let status: SubscriptionStatus =
            if entry["cancellation_date_ms"] != nil && entry["is_upgraded"] as? String != "true" { .refunded }
            else if expires > now { .active }
            else if retrying, let graceEnd, graceEnd > now { .inGrace }
            else if retrying { .inBillingRetry }
            else { .expired }
        return ReadState(
            status: status, productID: entry["product_id"] as? String, expiresAtMs: expires,
            autoRenew: (renewal["auto_renew_status"] as? String).map { $0 == "1" },
            autoRenewProductID: renewal["auto_renew_product_id"] as? String,
            expirationIntent: (renewal["expiration_intent"] as? String).flatMap { Int($0) },
            ownership: entry["in_app_ownership_type"] as? String)
    }

    private static func ms(_ entry: [String: Any], _ key: String) -> Int64 {
        (entry[key] as? String).flatMap { Int64($0) } ?? 0
    }
}
