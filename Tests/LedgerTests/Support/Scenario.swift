import AppStore
import Foundation
import Ledger

/// Hand-built verifyReceipt bodies, spelled the way Apple spells them (strings for ids,
/// millisecond dates and flags); adapted from AppStoreTests' scenario builder.
struct Entry {
    var transactionID: String
    var originalTransactionID: String
    var productID = Scenario.pro
    var purchased: Instant
    var expires: Instant
    var cancelled: Instant? = nil
    var cancellationReason: Int? = nil

    var json: [String: Any] {
        var fields: [String: Any] = [
            "quantity": "1", "transaction_id": transactionID, "original_transaction_id": originalTransactionID,
            "product_id": productID, "purchase_date_ms": String(purchased.millisecondsSince1970),
            "original_purchase_date_ms": String(Scenario.chainStart.millisecondsSince1970),
            "expires_date_ms": String(expires.millisecondsSince1970), "is_trial_period": "false",
            "is_in_intro_offer_period": "false", "in_app_ownership_type": "PURCHASED",
        ]
        if let cancelled { fields["cancellation_date_ms"] = String(cancelled.millisecondsSince1970) }
        if let cancellationReason { fields["cancellation_reason"] = String(cancellationReason) }
        return fields
    }
}

enum Scenario {
    static let pro = "com.example.pro.monthly"
    static let chainStart = day(1, 1)

    /// Midnight UTC (or `hour`) on a day of 2024.
    static func day(_ month: Int, _ day: Int, hour: Int = 0) -> Instant {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        guard let instant = Instant(iso8601: "2024-\(two(month))-\(two(day))T\(two(hour)):00:00.000Z") else {
            fatalError("bad test day")
        }
        return instant
    }

    /// The months a subscription `id` was paid for, January first: transaction ids `id`01, `id`02…
    static func months(_ id: String, _ count: Int) -> [Entry] {
        (1...count).map { month in
            Entry(
                transactionID: "\(id)0\(month)", originalTransactionID: id,
                purchased: day(month, 1), expires: day(month + 1, 1))
        }
    }

    /// A status-0 response listing `entries`, with auto-renew on for every subscription in it.
    static func response(_ entries: [Entry], autoRenew: Bool = true, receipt: String? = nil) throws
        -> VerifyReceiptResponse
    {
        let renewals = Set(entries.map(\.originalTransactionID)).map { id -> [String: Any] in
            [
                "original_transaction_id": id, "product_id": pro, "auto_renew_product_id": pro,
                "auto_renew_status": autoRenew ? "1" : "0", "is_in_billing_retry_period": "0",
            ]
        }
        var body: [String: Any] = [
            "status": 0, "environment": "Production",
            "receipt": ["receipt_type": "Production", "bundle_id": "com.example", "in_app": [[String: Any]]()],
            "latest_receipt_info": entries.map(\.json), "pending_renewal_info": renewals,
        ]
        body["latest_receipt"] = receipt
        return try VerifyReceiptResponse(body: JSONSerialization.data(withJSONObject: body), httpStatus: 200)
    }

    /// The analysis a worker makes of `response` for `subscription` at `now`.
    static func analyse(_ subscription: LoadedSubscription, _ response: VerifyReceiptResponse, at now: Instant) throws
        -> Analysis
    {
        try analyse(stored: subscription.state, subscription.originalTransactionID, response, at: now)
    }

    static func analyse(stored: SubscriptionState?, _ id: String, _ response: VerifyReceiptResponse, at now: Instant)
        throws -> Analysis
    {
        try SubscriptionAnalyzer.analyze(stored: stored, response: response, originalTransactionID: id, now: now.date)
    }

    /// A successful verifyReceipt attempt at `now`.
    static func attempt(at now: Instant, outcome: AttemptOutcome = .verified, status: Int? = 0) -> VerificationAttempt {
        VerificationAttempt(
            attemptedAt: now.date, outcome: outcome, environment: .production, appleStatus: status, httpStatus: 200,
            latencyMilliseconds: 120, runID: "test-run")
    }

    /// The write of a worker that verified `subscription` at `now` and got `response`.
    static func write(_ subscription: LoadedSubscription, _ response: VerifyReceiptResponse, at now: Instant) throws
        -> VerificationWrite
    {
        .analysed(try analyse(subscription, response, at: now), of: subscription, attempt: attempt(at: now))
    }

    /// A nightly run long after every verification of these tests, so that active subscriptions
    /// are next checked just after their expiry.
    static let nightlyRun = Date(timeIntervalSince1970: 2_000_000_000)
}
