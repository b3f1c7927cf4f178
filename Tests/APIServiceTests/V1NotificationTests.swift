import AppStore
import Foundation
import Testing

/// V1 notifications re-verify the subscription they are about, whichever era of body Apple sent.
@Suite struct V1NotificationTests {
    static let day: Int64 = 86_400_000

    /// A customer with two subscription groups: a news subscription that runs longer, and the pro
    /// subscription the notification is about (its auto-renew was turned off).
    @Test(arguments: [true, false])
    func aNotificationAboutOneGroupReVerifiesThatGroupNotTheLatestExpiring(withPendingRenewalInfo: Bool) async throws {
        try await APIHarness.with { api in
            let (news, pro) = ("1000000700000001", "1000000700000002")
            let now = APIHarness.nowMs
            var unified: [String: Any] = [
                "status": 0, "environment": "Production", "latest_receipt": api.receipt().receiptData,
                "latest_receipt_info": [
                    Self.transaction(original: news, id: "1000000700000011", product: "news.monthly", expiresMs: now + 20 * Self.day),
                    Self.transaction(original: pro, id: "1000000700000012", product: "pro.yearly", expiresMs: now + 5 * Self.day),
                ],
            ]
            if withPendingRenewalInfo {
                unified["pending_renewal_info"] = [
                    ["original_transaction_id": news, "product_id": "news.monthly", "auto_renew_product_id": "news.monthly",
                     "auto_renew_status": "1"],
                    ["original_transaction_id": pro, "product_id": "pro.yearly", "auto_renew_product_id": "pro.yearly",
                     "auto_renew_status": "0"],
                ]
            }
            let body: [String: Any] = [
                "notification_type": "DID_CHANGE_RENEWAL_STATUS", "environment": "PROD", "password": APIHarness.sharedSecret,
                "auto_renew_product_id": "pro.yearly", "auto_renew_status": "false",
                "auto_renew_status_change_date_ms": "\(now)", "bid": "com.example.app", "bvrs": "42",
                "unified_receipt": unified,
            ]
            let reply = try await api.post(APIHarness.notificationPath, body, auth: .none)
            #expect(reply.json["status"] as? String == "queued")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE original_transaction_id = '\(pro)'") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE original_transaction_id = '\(pro)'") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE original_transaction_id = '\(news)'") == 0)
        }
    }

    /// Before 2021 a refund came as a CANCEL carrying the refunded transaction at the top level, in
    /// `latest_expired_receipt_info`, with no unified receipt (or an empty one).
    @Test(arguments: [false, true])
    func aPre2021CancelFindsItsSubscriptionByItsExpiredReceiptInfo(withEmptyUnifiedReceipt: Bool) async throws {
        try await APIHarness.with { api in
            let (otid, id) = try await api.registered()
            let now = APIHarness.nowMs
            var expired = Self.transaction(original: otid, id: "\(otid)7", product: "pro.monthly", expiresMs: now + 20 * Self.day)
            expired.merge([
                "cancellation_date_ms": "\(now - Self.day)", "cancellation_date": "2019-02-18 15:37:19 Etc/GMT",
                "cancellation_reason": "0", "bid": "com.example.app", "bvrs": "42", "item_id": "1234567890",
            ]) { $1 }
            var body: [String: Any] = [
                "notification_type": "CANCEL", "environment": "PROD", "password": APIHarness.sharedSecret,
                "cancellation_date_ms": "\(now - Self.day)", "cancellation_date": "2019-02-18 15:37:19 Etc/GMT",
                "cancellation_date_pst": "2019-02-18 07:37:19 America/Los_Angeles", "web_order_line_item_id": "\(otid)5",
                "auto_renew_status": "false", "auto_renew_product_id": "pro.monthly", "auto_renew_adam_id": "1234567890",
                "bid": "com.example.app", "bvrs": "42",
                "latest_expired_receipt": "ewoJInNpZ25hdHVyZSIgPSAiQTFi", "latest_expired_receipt_info": expired,
            ]
            if withEmptyUnifiedReceipt {
                body["unified_receipt"] = ["status": 0, "environment": "Production", "latest_receipt_info": [], "pending_renewal_info": []]
            }
            let reply = try await api.post(APIHarness.notificationPath, body, auth: .none)
            #expect(reply.status == 200)
            #expect(reply.json["status"] as? String == "queued")
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE subscription_id = \(id) AND outcome = 'queued'") == 1)
            #expect(try await api.streamLength(\.readyHigh) == 1)
        }
    }

    /// During a rotation of the shared secret, Apple may send either secret as the password: both
    /// are accepted, anything else is refused.
    @Test func duringARotationEitherSecretIsThePassword() async throws {
        try await APIHarness.with(configureFleet: {
            $0.sharedSecret = SharedSecret("the-new-secret")
            $0.previousSharedSecret = SharedSecret(APIHarness.sharedSecret)
        }) { api in
            let (otid, _) = try await api.registered()
            func notify(_ password: String) async throws -> Int {
                let expired = Self.transaction(original: otid, id: "\(otid)8", product: "pro.monthly", expiresMs: APIHarness.nowMs)
                return try await api.post(APIHarness.notificationPath, [
                    "notification_type": "DID_CHANGE_RENEWAL_STATUS", "environment": "PROD", "password": password,
                    "auto_renew_status": "false", "auto_renew_status_change_date_ms": "\(APIHarness.nowMs)", "bid": "com.example.app",
                    "unified_receipt": ["status": 0, "environment": "Production", "latest_receipt_info": [expired]],
                ], auth: .none).status
            }
            #expect(try await notify("the-new-secret") == 200)
            #expect(try await notify(APIHarness.sharedSecret) == 200)
            #expect(try await notify("neither-of-them") == 401)
        }
    }

    /// One transaction as V1 spells it: numbers as strings, dates as `*_date_ms`.
    static func transaction(original: String, id: String, product: String, expiresMs: Int64) -> [String: Any] {
        [
            "original_transaction_id": original, "transaction_id": id, "product_id": product, "quantity": "1",
            "purchase_date_ms": "\(expiresMs - 30 * day)", "original_purchase_date_ms": "\(expiresMs - 30 * day)",
            "expires_date_ms": "\(expiresMs)", "expires_date": "\(expiresMs)", "web_order_line_item_id": "\(id)5",
            "is_trial_period": "false", "is_in_intro_offer_period": "false",
        ]
    }
}
