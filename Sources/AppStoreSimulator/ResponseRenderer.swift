/// Writes verifyReceipt answers in Apple's exact shape: field names, strings for numbers, dates and
/// booleans, the three date spellings, `latest_receipt_info` newest first.
enum ResponseRenderer {
    /// `{"status":21007}`: how Apple answers everything that is not a decoded receipt.
    static func status(_ code: Int) -> [UInt8] {
        var json = JSONWriter(capacity: 24)
        json.beginObject()
        json.number("status", Int64(code))
        json.endObject()
        return json.finish()
    }

    /// Status 0 with the receipt, its transactions and pending renewals as they stand at `now`.
    static func valid(_ receipt: SimulatedReceipt, snapshots: [ChainSnapshot], now: Int64,
                      excludeOldTransactions: Bool) -> [UInt8] {
        let token = receipt.token
        let sandbox = token.environment == .sandbox
        let all = snapshots.flatMap(\.transactions)
        let lifetime = receipt.lifetimePurchase.flatMap { $0.status(at: now) == nil ? nil : $0 }
        let purchases = all.map(\.purchaseMs) + (lifetime.map { [$0.purchaseMs] } ?? [])
        let firstPurchase = purchases.min() ?? now
        let created = min(token.createdMs ?? firstPurchase, now)

        var json = JSONWriter(capacity: 1024 + 1200 * all.count)
        json.beginObject()
        json.number("status", 0)
        json.string("environment", token.environment.rawValue)

        json.beginObject("receipt")
        json.string("receipt_type", sandbox ? "ProductionSandbox" : "Production")
        json.number("adam_id", sandbox ? 0 : Catalog.appItemID)
        json.number("app_item_id", sandbox ? 0 : Catalog.appItemID)
        json.string("bundle_id", token.bundleID)
        json.string("application_version", sandbox ? "1.0" : "57")
        json.number("download_id", sandbox ? 0 : 31_029_730_000_000 + Int64(token.index))
        json.number("version_external_identifier", sandbox ? 0 : 822_844_535)
        json.date("receipt_creation_date", created)
        json.date("request_date", now)
        json.date("original_purchase_date", firstPurchase - Durations.hour)
        json.string("original_application_version", "1.0")
        json.beginArray("in_app")
        for transaction in all.filter({ $0.purchaseMs <= created }).sorted(by: { $0.purchaseMs < $1.purchaseMs }) {
            write(transaction, to: &json, inLatestReceiptInfo: false)
        }
        if let lifetime, lifetime.purchaseMs <= created { lifetime.write(to: &json, at: now) }
        json.endArray()
        json.endObject()

        // With exclude-old-transactions Apple keeps only each subscription's newest entry.
        let latest = excludeOldTransactions ? snapshots.map { $0.transactions.last! } : all
        json.beginArray("latest_receipt_info")
        var lifetimeToList = lifetime  // in its place among the newest-first entries
        for transaction in latest.sorted(by: { $0.purchaseMs > $1.purchaseMs }) {
            if let purchase = lifetimeToList, purchase.purchaseMs > transaction.purchaseMs {
                purchase.write(to: &json, at: now)
                lifetimeToList = nil
            }
            write(transaction, to: &json, inLatestReceiptInfo: true)
        }
        lifetimeToList?.write(to: &json, at: now)
        json.endArray()

        // The newest receipt is the one issued with the latest purchase; it is this one if nothing came after.
        let newestPurchase = purchases.max() ?? created
        json.string("latest_receipt", (newestPurchase == created ? token : token.reissued(atMs: newestPurchase)).receiptData)

        json.beginArray("pending_renewal_info")
        for snapshot in snapshots { write(snapshot.renewal, to: &json) }
        json.endArray()
        json.endObject()
        return json.finish()
    }

    private static func write(_ transaction: SimulatedTransaction, to json: inout JSONWriter, inLatestReceiptInfo: Bool) {
        json.beginObject()
        json.numberString("quantity", 1)
        json.string("product_id", transaction.plan.productID)
        json.numberString("transaction_id", transaction.transactionID)
        json.numberString("original_transaction_id", transaction.originalTransactionID)
        json.date("purchase_date", transaction.purchaseMs)
        json.date("original_purchase_date", transaction.originalPurchaseMs)
        json.date("expires_date", transaction.expiresMs)
        json.numberString("web_order_line_item_id", transaction.webOrderLineItemID)
        json.boolString("is_trial_period", transaction.isTrial)
        json.boolString("is_in_intro_offer_period", false)
        json.string("offer_code_ref_name", transaction.offerCode)
        json.date("cancellation_date", transaction.cancellationMs)
        json.numberString("cancellation_reason", transaction.cancellationReason)
        // Apple documents is_upgraded only in latest_receipt_info; in_app entries go without it.
        if transaction.isUpgraded, inLatestReceiptInfo {
            json.boolString("is_upgraded", true)
        }
        json.string("in_app_ownership_type", transaction.ownership.rawValue)
        if inLatestReceiptInfo {
            json.string("subscription_group_identifier", transaction.plan.group)
        }
        json.endObject()
    }

    private static func write(_ renewal: PendingRenewal, to json: inout JSONWriter) {
        json.beginObject()
        json.numberString("expiration_intent", renewal.expirationIntent)
        json.string("auto_renew_product_id", renewal.autoRenewProductID)
        json.numberString("is_in_billing_retry_period", renewal.isInBillingRetry.map { $0 ? 1 : 0 })
        json.numberString("original_transaction_id", renewal.originalTransactionID)
        json.string("product_id", renewal.productID)
        json.numberString("auto_renew_status", renewal.autoRenewOn ? 1 : 0)
        json.date("grace_period_expires_date", renewal.graceExpiresMs)
        json.numberString("price_consent_status", renewal.priceConsentStatus)
        json.string("offer_code_ref_name", renewal.offerCode)
        json.endObject()
    }
}
