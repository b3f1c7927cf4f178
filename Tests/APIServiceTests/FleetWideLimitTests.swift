import APIService
import AppStore
import Foundation
import Ledger
import TestSupport
import Testing

/// The per-client limit holds across `serve` replicas (it lives in Redis), and a Redis outage
/// stops neither the app's back end nor Apple's notifications.
@Suite struct FleetWideLimitTests {
    @Test func replicasShareEachClientsBudget() async throws {
        try await APIHarness.with(configure: { ($0.clientRateLimit, $0.clientRateBurst) = (0.01, 4) }, replicas: 2) { api in
            var statuses: [Int] = []
            for index in 0..<8 {
                statuses.append(try await api.replica(index % 2).get("/v1/subscriptions?account_id=x").status)
            }
            #expect(statuses.prefix(4).allSatisfy { $0 == 200 })
            #expect(statuses.dropFirst(4).allSatisfy { $0 == 429 }, "two replicas allowed \(statuses.filter { $0 == 200 }.count) of a burst of 4")
            // Another client's bucket is its own, on either replica.
            #expect(try await api.replica(1).get("/v1/subscriptions?account_id=x", auth: .none).status == 401)
        }
    }

    @Test func withoutRedisTokensPassAnonymousCallersWaitAndApplesNotificationsAreStored() async throws {
        let log = CapturedLog()
        try await APIHarness.with(
            configureFleet: { $0.redisURL = "unix:///nonexistent/receiptfleet-test-redis.sock" }, log: log
        ) { api in
            let otid = "2000000\(UInt32.random(in: 100_000...999_999))"
            let database = api.database
            try await onOwnThread {
                try Ledger(database.connect()).addSubscriptions([NewSubscription(
                    originalTransactionID: otid, environment: .production, receipt: ReceiptData(base64: "c3RvcmVk"))])
            }

            let app = try await api.get("/v1/subscriptions?original_transaction_id=\(otid)")
            #expect(app.status == 200, "the app's back end reads from PostgreSQL")
            let anonymous = try await api.get("/v1/subscriptions?account_id=x", auth: .none)
            #expect(anonymous.status == 503 && anonymous.code == "rate_limit_unavailable")

            let apple = try await api.post(APIHarness.notificationPath, try api.signedNotification(otid: otid), auth: .none)
            #expect(apple.status == 200 && apple.json["status"] as? String == "stored")
            let awaiting = try await onOwnThread {
                try Ledger(database.connect()).notificationsAwaitingVerification(since: Date(timeIntervalSince1970: 0)).count
            }
            #expect(awaiting == 1, "the scheduler's next pass finds it and enqueues its job")
            #expect(log.text.contains("the client rate limit cannot be checked"))
        }
    }
}
