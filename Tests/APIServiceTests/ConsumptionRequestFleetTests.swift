import AppStore
import AppStoreSimulator
import Fleet
import FleetConfiguration
import Foundation
import Lanes
import Operations
import PostgresClient
import TestSupport
import Testing

/// A customer asks Apple for a refund: the simulator's CONSUMPTION_REQUEST reaches `serve`, which
/// records it; the workers' responder answers it through the Server API before Apple's 12 hours,
/// only for an account that consented (the API takes consent and its withdrawal); a request found
/// only later by notification recovery, past its window, is recorded as missed and never sent
/// (issue 30, part 3).
@Suite struct ConsumptionRequestFleetTests {
    static let day: Int64 = 86_400_000

    /// The device's signed transaction of `subscription`, as an app sends it to link an account.
    static func signedTransaction(of subscription: SimulatedSubscription) throws -> String {
        let payload: [String: Any] = [
            "transactionId": subscription.originalTransactionID, "originalTransactionId": subscription.originalTransactionID,
            "bundleId": subscription.receipt.token.bundleID, "productId": "com.receiptfleet.demo.pro.monthly",
            "environment": subscription.receipt.token.environment.rawValue, "purchaseDate": APIHarness.nowMs,
            "signedDate": APIHarness.nowMs, "type": "Auto-Renewable Subscription",
        ]
        return try SimulatorSigningChain().sign(Array(JSONSerialization.data(withJSONObject: payload)))
    }

    /// Every subscription of the simulator's first 60 receipts that will be refunded, registered by
    /// the app (linked to `account` when given).
    static func registerTheRefunded(_ api: APIHarness, account: String? = nil) async throws -> [SimulatedSubscription] {
        let refunded = (0..<60).map { api.receipt(index: $0) }.filter { $0.kind == .refunded || $0.kind == .refundReversed }
            .flatMap(\.subscriptions)
        #expect(refunded.count >= 4)
        for subscription in refunded {
            var registration = ["signed_transaction": try Self.signedTransaction(of: subscription)]
            registration["account_id"] = account
            let reply = try await api.post("/v1/transactions", registration)
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        }
        return refunded
    }

    @Test func consentedRequestsAreAnsweredInTimeTheOthersRecordedUnansweredOrMissed() async throws {
        try await NotificationDeliveryTests.with(fleet: 60) { api, environment in
            let store = api.simulator.store
            let start = store.clock.nowMs
            let refunded = try await Self.registerTheRefunded(api)
            #expect(try await api.put("/v1/accounts/consents/refund-consent").status == 200)
            #expect(try await api.put("/v1/accounts/withdrew/refund-consent").status == 200)
            let withdrawn = try await api.delete("/v1/accounts/withdrew/refund-consent")
            let said = String(decoding: withdrawn.body, as: UTF8.self)
            #expect(withdrawn.status == 200 && said.contains("\"consented\":false"), "\(said)")
            #expect(try await api.put("/v1/accounts/consents/refund-consent", auth: .none).status == 401)

            // The month before, recovered now: those requests' windows closed long ago.
            let window = ["--since", NotificationDeliveryTests.iso(start - 29 * Self.day), "--until", NotificationDeliveryTests.iso(start - Self.day)]
            let recovered = try await runFleetCommand(["notifications", "recover"] + window, environment: environment)
            #expect(recovered.status == 0, "\(recovered.output)")
            let missed = try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'missed'")
            let foundLate = try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE deadline <= received_at")
            #expect(missed > 0 && missed == foundLate, "only the requests found past their deadline are missed")
            #expect(try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state <> 'missed'") == 0)

            // Apple sends the next 40 days' notifications: every request comes in its window.
            try store.sendNotifications(to: api.baseURL + "/v1/notifications/apple")
            store.clock.advance(byMs: 40 * Self.day)
            await store.sendDueNotifications()
            let pending = try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'pending'")
            #expect(pending >= 2, "the simulator asked about some refunds")
            // The customers who asked: every other one's account consented, the others' withdrew.
            let database = api.database
            let asking = try await onOwnThread {
                try database.connect().query("SELECT original_transaction_id FROM consumption_requests WHERE state = 'pending' ORDER BY id")
                    .map { try $0["original_transaction_id"].text() ?? "" }
            }
            for (index, id) in asking.enumerated() {
                let subscription = try #require(refunded.first { $0.originalTransactionID == id })
                let reply = try await api.post("/v1/transactions", [
                    "signed_transaction": try Self.signedTransaction(of: subscription), "account_id": index % 2 == 0 ? "consents" : "withdrew",
                ])
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            }

            // The app's policy asks Apple to decline: every answer says so.
            var declining = api.fleet
            declining.apps = try AppCatalog(declining.apps.apps.map { app in
                var app = app
                app.refundPreference = .decline
                return app
            })
            let fleet = declining
            let pass = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics(), clock: SystemClock()).answerDue() }
            #expect(pass.answered + pass.unanswered == pending && pass.missed == 0 && pass.retried == 0, "\(pass)")
            let answered = try await api.count("""
                SELECT count(*) AS n FROM consumption_requests c JOIN subscriptions s ON s.id = c.subscription_id
                WHERE c.state = 'answered' AND s.account_id = 'consents' AND c.answer->>'customerConsented' = 'true'
                """)
            #expect(answered == pass.answered && answered > 0)
            let withheld = try await api.count("""
                SELECT count(*) AS n FROM consumption_requests c JOIN subscriptions s ON s.id = c.subscription_id
                WHERE c.state = 'unanswered' AND c.unanswered_reason = 'no_consent' AND s.account_id = 'withdrew'
                """)
            #expect(withheld == pass.unanswered && withheld > 0)
            let told = store.consumptionAnswers
            #expect(told.count == answered, "Apple heard each consented request once")
            #expect(told.allSatisfy { $0.deliveryStatus == "DELIVERED" && $0.consumptionPercentage == nil && $0.refundPreference == "DECLINE" },
                    "\(told)")
            let sentIDs = Set(told.map(\.transactionID))
            let answeredIDs = try await onOwnThread {
                try database.connect().query("SELECT transaction_id FROM consumption_requests WHERE state = 'answered'")
                    .map { try $0["transaction_id"].text() ?? "" }
            }
            #expect(sentIDs == Set(answeredIDs) && sentIDs.count == told.count, "Apple was told about exactly the answered requests")
            #expect(try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'missed'") == missed)

            let shown = try await api.count("SELECT min(subscription_id) AS n FROM consumption_requests WHERE state = 'answered'")
            let show = try await runFleetCommand(["subscriptions", "show", "\(shown)"], environment: environment)
            #expect(show.status == 0 && show.output.contains("refund requests ") && show.output.contains(" answered "), "\(show.output)")
            let again = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics(), clock: SystemClock()).answerDue() }
            #expect(again.isEmpty && store.consumptionAnswers.count == answered, "an answered, unanswered or missed request is not sent again")
        }
    }

    /// Apple down when the responder asks: each request stays pending with the error, an attempt
    /// charged, not asked again before its retry time; once Apple is back they are answered, each once.
    @Test func whileAppleIsDownTheRequestsWaitAndAreAnsweredOnceItIsBack() async throws {
        try await NotificationDeliveryTests.with(fleet: 60) { api, _ in
            let store = api.simulator.store
            _ = try await Self.registerTheRefunded(api, account: "consents")
            #expect(try await api.put("/v1/accounts/consents/refund-consent").status == 200)
            try store.sendNotifications(to: api.baseURL + "/v1/notifications/apple")
            store.clock.advance(byMs: 40 * Self.day)
            await store.sendDueNotifications()
            let pending = try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'pending'")
            #expect(pending >= 2)

            _ = store.startOutage(seconds: 3_600)
            let fleet = api.fleet
            let down = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics(), clock: SystemClock()).answerDue() }
            #expect(down.retried == pending && down.answered == 0 && down.unanswered == 0, "\(down)")
            #expect(try await api.count("""
                SELECT count(*) AS n FROM consumption_requests
                WHERE state = 'pending' AND attempts = 1 AND last_error LIKE '%5000001%' AND next_attempt_at > now()
                """) == pending, "each waits with Apple's error")
            #expect(store.consumptionAnswers.isEmpty)
            let soon = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics(), clock: SystemClock()).answerDue() }
            #expect(soon.isEmpty, "not asked again before its retry time")

            _ = store.startOutage(seconds: 0)
            let later = Date().addingTimeInterval(60)
            let back = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics(), clock: DrivenClock(at: later)).answerDue() }
            #expect(back.answered == pending && back.retried == 0, "\(back)")
            #expect(store.consumptionAnswers.count == pending && Set(store.consumptionAnswers.map(\.transactionID)).count == pending)
            #expect(try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'answered' AND attempts = 2") == pending)
        }
    }
}
