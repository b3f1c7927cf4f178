import Foundation
import Testing
import TestSupport

/// A V2 notification's signed transaction and renewal info are applied at once when Apple signed
/// them after the stored state was judged. On verifyReceipt the re-check it queues confirms them;
/// on the Server API, data that tells the whole change settles it with no call to Apple.
@Suite struct SignedNotificationTests {
    /// The subscription's stored latest transaction, as `GET /v1/subscriptions/{id}` shows it.
    static func latestTransaction(_ api: APIHarness, id: Int) async throws -> [String: Any] {
        let detail = try await api.get("/v1/subscriptions/\(id)")
        let transactions = try #require((detail.json["history"] as? [String: Any])?["transactions"] as? [[String: Any]])
        return try #require(transactions.last)
    }

    /// An ISO 8601 time the API wrote (with or without milliseconds), in ms since 1970.
    static func milliseconds(_ text: Any?) throws -> Int64 {
        let text = try #require(text as? String)
        let date = try #require(
            (try? Date(text, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)))
                ?? (try? Date(text, strategy: .iso8601)))
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// DID_CHANGE_RENEWAL_STATUS for `otid`'s latest transaction: auto-renew off, signed at `signedMs`.
    static func autoRenewOff(
        _ api: APIHarness, otid: String, transaction: [String: Any], signedMs: Int64, uuid: String = UUID().uuidString
    ) throws -> [String: Any] {
        try signed(api, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", otid: otid, transactionID: try #require(transaction["transaction_id"] as? String),
                   product: try #require(transaction["product_id"] as? String), purchasedMs: try milliseconds(transaction["purchased_at"]),
                   expiresMs: try milliseconds(transaction["expires_at"]), autoRenew: false, signedMs: signedMs, uuid: uuid)
    }

    /// A V2 notification about `otid` carrying one transaction and its renewal info, as Apple signs them.
    static func signed(
        _ api: APIHarness, _ type: String, _ subtype: String?, otid: String, transactionID: String, product: String,
        purchasedMs: Int64, expiresMs: Int64, autoRenew: Bool, signedMs: Int64, uuid: String = UUID().uuidString
    ) throws -> [String: Any] {
        let signedTransaction = try api.ca.sign([
            "transactionId": transactionID, "originalTransactionId": otid, "bundleId": "com.example.app", "productId": product,
            "environment": "Production", "purchaseDate": purchasedMs, "originalPurchaseDate": purchasedMs, "expiresDate": expiresMs,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": signedMs,
        ])
        let signedRenewal = try api.ca.sign([
            "originalTransactionId": otid, "productId": product, "autoRenewProductId": product, "autoRenewStatus": autoRenew ? 1 : 0,
            "environment": "Production", "signedDate": signedMs,
        ])
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signedMs,
            "data": ["environment": "Production", "bundleId": "com.example.app", "signedTransactionInfo": signedTransaction,
                     "signedRenewalInfo": signedRenewal],
        ]
        if let subtype { payload["subtype"] = subtype }
        return ["signedPayload": try api.ca.sign(payload)]
    }

    @Test func aNewerSignedChangeIsAppliedAtOnceAndAnOlderOneIsNot() async throws {
        try await APIHarness.with { api in
            let (otid, id) = try await api.registered()
            let transaction = try await Self.latestTransaction(api, id: id)
            let stored = try await api.get("/v1/subscriptions/\(id)")
            #expect(stored.json["auto_renew"] as? Bool == true)
            let storedAt = try Self.milliseconds(stored.json["last_verified_at"])

            // Signed before the stored state was judged: left to the re-check.
            let older = try Self.autoRenewOff(api, otid: otid, transaction: transaction, signedMs: storedAt - 60_000)
            #expect(try await api.post(APIHarness.notificationPath, older, auth: .none).json["status"] as? String == "queued")
            #expect(try await api.count("SELECT count(*) AS n FROM events WHERE type = 'auto_renew_disabled'") == 0)

            // Signed after: the change is known before any worker runs, and its job is still queued.
            let uuid = UUID().uuidString
            let newer = try Self.autoRenewOff(api, otid: otid, transaction: transaction, signedMs: storedAt + 60_000, uuid: uuid)
            #expect(try await api.post(APIHarness.notificationPath, newer, auth: .none).json["status"] as? String == "queued")
            #expect(try await api.get("/v1/subscriptions/\(id)").json["auto_renew"] as? Bool == false)
            #expect(try await api.count("SELECT count(*) AS n FROM events WHERE type = 'auto_renew_disabled'") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM verifications WHERE run_id = 'notification' AND backend = 'server_api'") == 1)
            // Recorded as what it is: Apple's signed data, verified, and no call (no status, latency or HTTP status).
            #expect(try await api.count(
                "SELECT count(*) AS n FROM verifications WHERE run_id = 'notification' AND outcome = 'verified' "
                    + "AND apple_status IS NULL AND latency_ms IS NULL AND http_status IS NULL") == 1)
            #expect(try await api.streamLength(\.readyHigh) == 2, "both notifications' re-checks are queued")

            // Apple's second copy of the same notification applies nothing again.
            #expect(try await api.post(APIHarness.notificationPath, newer, auth: .none).json["status"] as? String == "duplicate")
            #expect(try await api.count("SELECT count(*) AS n FROM verifications WHERE run_id = 'notification'") == 1)
        }
    }

    /// On the Server API a notification whose signed data continues the known state settles the
    /// change: applied, recorded as settled, and no job queued (no call to Apple). One that skips
    /// periods the fleet never saw queues the check that reads Apple's history.
    @Test func onTheServerAPIWhatTheSignedDataTellsWhollyIsSettledWithoutACall() async throws {
        try await APIHarness.with { api in
            let (otid, id) = try await api.registered()
            try await api.execute("UPDATE subscriptions SET backend = 'server_api' WHERE id = \(id)")
            let transaction = try await Self.latestTransaction(api, id: id)
            let storedAt = try Self.milliseconds(try await api.get("/v1/subscriptions/\(id)").json["last_verified_at"])
            let (purchased, expires) = (try Self.milliseconds(transaction["purchased_at"]), try Self.milliseconds(transaction["expires_at"]))
            let product = try #require(transaction["product_id"] as? String)

            // The next period, bought as the known one ends: settled.
            let renewal = try Self.signed(
                api, "DID_RENEW", nil, otid: otid, transactionID: "\(otid)1", product: product, purchasedMs: expires,
                expiresMs: expires + (expires - purchased), autoRenew: true, signedMs: storedAt + 60_000)
            #expect(try await api.post(APIHarness.notificationPath, renewal, auth: .none).json["status"] as? String == "settled")
            #expect(try await api.count("SELECT count(*) AS n FROM events WHERE type = 'renewed'") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE outcome = 'settled'") == 1)
            #expect(try await api.streamLength(\.readyHigh) == 0, "no check: Apple would answer the same")

            // A change within that period: settled too.
            let off = try Self.signed(
                api, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", otid: otid, transactionID: "\(otid)1", product: product,
                purchasedMs: expires, expiresMs: expires + (expires - purchased), autoRenew: false, signedMs: storedAt + 120_000)
            #expect(try await api.post(APIHarness.notificationPath, off, auth: .none).json["status"] as? String == "settled")
            #expect(try await api.get("/v1/subscriptions/\(id)").json["auto_renew"] as? Bool == false)

            // Three periods later, the two between unseen: the check that reads Apple's history is queued.
            let period = expires - purchased
            let skipped = try Self.signed(
                api, "DID_RENEW", nil, otid: otid, transactionID: "\(otid)4", product: product, purchasedMs: expires + 3 * period,
                expiresMs: expires + 4 * period, autoRenew: true, signedMs: storedAt + 180_000)
            #expect(try await api.post(APIHarness.notificationPath, skipped, auth: .none).json["status"] as? String == "queued")
            #expect(try await api.streamLength(\.readyHigh) == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM notifications WHERE outcome = 'queued'") == 1)
        }
    }
}
