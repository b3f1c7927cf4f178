import AppStore
import AppStoreSimulator
import Fleet
import FleetConfiguration
import Foundation
import Testing

/// A deployment of two apps: a registration and a V1 notification find their app by bundle id,
/// and every lookup names the app, whose accounts and transactions are its own.
@Suite struct SeveralAppsAPITests {
    static func twoApps(_ fleet: inout FleetSettings) {
        fleet.apps = try! AppCatalog([
            AppConfiguration(name: "demo", bundleIDs: ["com.example.app", Catalog.bundleIDs[0]]),
            AppConfiguration(name: "journal", bundleIDs: [Catalog.bundleIDs[1]]),
        ])
    }

    @Test func aRegistrationBelongsToTheAppItsReceiptNames() async throws {
        try await APIHarness.with(configureFleet: Self.twoApps) { api in
            let journal = api.receipt(app: 1)
            let wrong = try await api.post("/v1/receipts", ["receipt": journal.receiptData, "app": "demo"])
            #expect(wrong.status == 422 && wrong.code == "wrong_app", "\(wrong.json)")
            let unknown = try await api.post("/v1/receipts", ["receipt": journal.receiptData, "app": "photos"])
            #expect(unknown.status == 400 && unknown.code == "unknown_app")

            let registered = try await api.post("/v1/receipts", ["receipt": journal.receiptData, "account_id": "acct-1"])
            #expect(registered.status == 200, "\(registered.json)")
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE app = 'journal'") == journal.subscriptions.count)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE app <> 'journal'") == 0)

            // Accounts are each app's own: the lookup names the app, or is refused.
            let mixed = try await api.get("/v1/subscriptions?account_id=acct-1")
            #expect(mixed.status == 400 && mixed.code == "app_required")
            let theirs = try await api.get("/v1/subscriptions?account_id=acct-1&app=journal")
            #expect((theirs.json["subscriptions"] as? [Any])?.count == journal.subscriptions.count)
            let others = try await api.get("/v1/subscriptions?account_id=acct-1&app=demo")
            #expect((others.json["subscriptions"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func aV1NotificationGoesToTheAppOfItsBid() async throws {
        try await APIHarness.with(configureFleet: Self.twoApps) { api in
            let journal = api.receipt(app: 1)
            let otid = journal.subscriptions[0].originalTransactionID
            func notification(bid: String) -> [String: Any] {
                ["notification_type": "DID_RENEW", "environment": "PROD", "password": APIHarness.sharedSecret, "bid": bid,
                 "unified_receipt": ["status": 0, "environment": "Production", "latest_receipt": journal.receiptData,
                                     "latest_receipt_info": [["original_transaction_id": otid, "transaction_id": otid,
                                                              "product_id": "com.receiptfleet.demo.pro.monthly"]]]]
            }
            let elsewhere = try await api.post(APIHarness.notificationPath, notification(bid: "com.example.other"), auth: .none)
            #expect(elsewhere.status == 401)
            let taken = try await api.post(APIHarness.notificationPath, notification(bid: Catalog.bundleIDs[1]), auth: .none)
            #expect(taken.status == 200, "\(taken.json)")
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE app = 'journal' AND original_transaction_id = '\(otid)'") == 1)
        }
    }

    /// A V2 notification names its app's bundle id: it reaches that app's subscription, and the
    /// same original_transaction_id means nothing to another app.
    @Test func aV2NotificationGoesToTheAppOfItsBundleID() async throws {
        try await APIHarness.with(configureFleet: Self.twoApps) { api in
            let journal = api.receipt(app: 1)
            let otid = journal.subscriptions[0].originalTransactionID
            #expect(try await api.post("/v1/receipts", ["receipt": journal.receiptData]).status == 200)
            let theirs = try await api.post(APIHarness.notificationPath, try api.signedNotification(otid: otid, bundleID: Catalog.bundleIDs[1]), auth: .none)
            #expect(theirs.status == 200 && theirs.json["status"] as? String == "queued", "\(theirs.json)")
            let others = try await api.post(APIHarness.notificationPath, try api.signedNotification(otid: otid), auth: .none)
            #expect(others.status == 200 && others.json["status"] as? String == "unknown_subscription", "\(others.json)")
            let stranger = try await api.post(APIHarness.notificationPath, try api.signedNotification(otid: otid, bundleID: "com.example.other"), auth: .none)
            #expect(stranger.status == 401)
        }
    }
}
