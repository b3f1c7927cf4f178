import AppStore
import Foundation
import Testing

/// Hand-built verifyReceipt bodies for event scenarios, spelled the way Apple spells them:
/// strings for ids, millisecond dates and flags.
struct Entry {
    var transactionID: String
    var originalTransactionID = Scenario.subscription
    var productID = Scenario.pro
    var purchased: Instant
    var expires: Instant
    var isTrial = false
    var isUpgraded = false
    var cancelled: Instant? = nil
    var cancellationReason: Int? = nil
    var offerCodeRefName: String? = nil
    var groupID: String? = nil
    var ownership = "PURCHASED"

    var json: [String: Any] {
        var fields: [String: Any] = [
            "quantity": "1", "transaction_id": transactionID, "original_transaction_id": originalTransactionID,
            "product_id": productID, "purchase_date_ms": String(purchased.millisecondsSince1970),
            "original_purchase_date_ms": String(Scenario.chainStart.millisecondsSince1970),
            "expires_date_ms": String(expires.millisecondsSince1970), "is_trial_period": String(isTrial),
            "is_in_intro_offer_period": "false",
            "in_app_ownership_type": ownership,
        ]
        fields["offer_code_ref_name"] = offerCodeRefName
        fields["subscription_group_identifier"] = groupID
        if isUpgraded { fields["is_upgraded"] = "true" }
        if let cancelled { fields["cancellation_date_ms"] = String(cancelled.millisecondsSince1970) }
        if let cancellationReason { fields["cancellation_reason"] = String(cancellationReason) }
        return fields
    }
}

struct Renewal {
    var originalTransactionID = Scenario.subscription
    var productID = Scenario.pro
    var autoRenewProductID = Scenario.pro
    var autoRenew = true
    var expirationIntent: Int? = nil
    var inBillingRetry = false
    var graceExpires: Instant? = nil
    var priceConsentStatus: Int? = nil
    var offerCodeRefName: String? = nil

    var json: [String: Any] {
        var fields: [String: Any] = [
            "original_transaction_id": originalTransactionID, "product_id": productID,
            "auto_renew_product_id": autoRenewProductID, "auto_renew_status": autoRenew ? "1" : "0",
            "is_in_billing_retry_period": inBillingRetry ? "1" : "0",
        ]
        if let expirationIntent { fields["expiration_intent"] = String(expirationIntent) }
        if let graceExpires { fields["grace_period_expires_date_ms"] = String(graceExpires.millisecondsSince1970) }
        if let priceConsentStatus { fields["price_consent_status"] = String(priceConsentStatus) }
        if let offerCodeRefName { fields["offer_code_ref_name"] = offerCodeRefName }
        return fields
    }
}

enum Scenario {
    static let subscription = "1000"
    static let pro = "com.example.pro.monthly"
    static let basic = "com.example.basic.monthly"
    /// Level 1 is the highest service, as in App Store Connect.
    static let catalog = ProductCatalog(levels: [pro: 1, basic: 2])
    static let chainStart = day(1, 1)

    /// Midnight UTC on a day of 2024.
    static func day(_ month: Int, _ day: Int, hour: Int = 0) -> Instant {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return utc("2024-\(two(month))-\(two(day))T\(two(hour)):00:00.000Z")
    }

    /// A status-0 answer with `entries` in `latest_receipt_info` and `inApp` in `receipt.in_app`;
    /// `answeredAt` is its `receipt.request_date_ms` (none when nil, as in some old recordings).
    static func response(
        _ entries: [Entry], inApp: [Entry] = [], renewals: [Renewal] = [Renewal()], receipt: String? = "UkVDRUlQVA==",
        answeredAt: Instant? = nil
    ) throws -> VerifyReceiptResponse {
        var receiptObject: [String: Any] = ["receipt_type": "Production", "bundle_id": "com.example", "in_app": inApp.map(\.json)]
        receiptObject["request_date_ms"] = answeredAt.map { String($0.millisecondsSince1970) }
        var body: [String: Any] = [
            "status": 0, "environment": "Production", "receipt": receiptObject,
            "latest_receipt_info": entries.map(\.json), "pending_renewal_info": renewals.map(\.json),
        ]
        body["latest_receipt"] = receipt
        return try VerifyReceiptResponse(body: JSONSerialization.data(withJSONObject: body), httpStatus: 200)
    }

    /// The state the fleet stored after seeing `entries` at `now`.
    static func stored(_ entries: [Entry], renewals: [Renewal] = [Renewal()], at now: Instant) throws -> SubscriptionState {
        try SubscriptionAnalyzer.analyze(
            stored: nil, response: response(entries, renewals: renewals), originalTransactionID: subscription,
            now: now.date, products: catalog
        ).state
    }

    /// Analyses like the fleet does, and checks what must hold for every analysis: the same
    /// response analysed again a little later gives the same event ids, and analysing it once more
    /// on top of its own result finds nothing new.
    static func analyze(
        stored: SubscriptionState?, _ response: VerifyReceiptResponse, at now: Instant,
        products: ProductCatalog = catalog, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Analysis {
        let run = { (stored: SubscriptionState?, now: Date) throws -> Analysis in
            try SubscriptionAnalyzer.analyze(
                stored: stored, response: response, originalTransactionID: subscription, now: now, products: products)
        }
        let analysis = try run(stored, now.date)
        let again = try run(stored, now.date.addingTimeInterval(90))
        #expect(again.events.map(\.id) == analysis.events.map(\.id), "ids depend on `now`", sourceLocation: sourceLocation)
        let settled = try run(analysis.state, now.date.addingTimeInterval(60))
        #expect(settled.events.isEmpty, "unchanged response fired \(settled.events.map(\.type))",
                sourceLocation: sourceLocation)
        return analysis
    }
}

extension SubscriptionEvent {
    subscript(_ key: String) -> JSONValue? { payload[key] }
}
