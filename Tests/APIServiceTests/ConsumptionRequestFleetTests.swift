import AppStoreSimulator
import Fleet
import Foundation
import TestSupport
import Testing

/// A customer asks Apple for a refund: the simulator's CONSUMPTION_REQUEST reaches `serve`, which
/// records it; the workers' responder answers it through the Server API before Apple's 12 hours,
/// only for an account that consented (the API takes consent and its withdrawal); a request found
/// only later by notification recovery, past its window, is recorded as missed and never sent
/// (issue 30, part 3).
@Suite struct ConsumptionRequestFleetTests {
    static let day: Int64 = 86_400_000

    @Test func consentedRequestsAreAnsweredInTimeTheOthersRecordedUnansweredOrMissed() async throws {
        try await NotificationDeliveryTests.with(fleet: 60) { api, environment in
            let store = api.simulator.store
            let start = store.clock.nowMs
            // Every subscription that will be refunded, registered for one of two accounts.
            let refunded = (0..<60).map { api.receipt(index: $0) }.filter { $0.kind == .refunded || $0.kind == .refundReversed }
                .flatMap(\.subscriptions).map(\.originalTransactionID)
            #expect(refunded.count >= 4)
            for (index, id) in refunded.enumerated() {
                let reply = try await api.post("/v1/transactions", ["transaction_id": id, "account_id": index % 2 == 0 ? "consents" : "withdrew"])
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            }
            #expect(try await api.put("/v1/accounts/consents/refund-consent").status == 200)
            #expect(try await api.put("/v1/accounts/withdrew/refund-consent").status == 200)
            let withdrawn = try await api.delete("/v1/accounts/withdrew/refund-consent")
            let said = String(decoding: withdrawn.body, as: UTF8.self)
            #expect(withdrawn.status == 200 && said.contains("\"consented\":false"), "\(said)")

            // Apple sends the next 40 days' notifications: every request comes in its window.
            store.sendNotifications(to: api.baseURL + "/v1/notifications/apple")
            store.clock.advance(byMs: 40 * Self.day)
            await store.sendDueNotifications()
            let pending = try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'pending'")
            #expect(pending > 0, "the simulator asked about some refunds")

            let fleet = api.fleet
            let pass = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics()).answerDue() }
            #expect(pass.answered + pass.unanswered == pending && pass.missed == 0 && pass.retried == 0, "\(pass)")
            let answered = try await api.count("""
                SELECT count(*) AS n FROM consumption_requests c JOIN subscriptions s ON s.id = c.subscription_id
                WHERE c.state = 'answered' AND s.account_id = 'consents' AND c.answer->>'customerConsented' = 'true'
                """)
            #expect(answered == pass.answered && answered > 0)
            #expect(try await api.count("""
                SELECT count(*) AS n FROM consumption_requests c JOIN subscriptions s ON s.id = c.subscription_id
                WHERE c.state = 'unanswered' AND c.unanswered_reason = 'no_consent' AND s.account_id = 'withdrew'
                """) == pass.unanswered)
            let told = store.consumptionAnswers
            #expect(told.count == answered, "Apple heard each consented request once")
            #expect(told.allSatisfy { $0.deliveryStatus == "DELIVERED" && $0.consumptionPercentage == nil }, "\(told)")
            let shown = try await api.count("SELECT min(subscription_id) AS n FROM consumption_requests WHERE state = 'answered'")
            let show = try await runFleetCommand(["subscriptions", "show", "\(shown)"], environment: environment)
            #expect(show.status == 0 && show.output.contains("refund requests ") && show.output.contains(" answered "), "\(show.output)")
            let again = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics()).answerDue() }
            #expect(again.isEmpty && store.consumptionAnswers.count == answered, "an answered request is not sent again")

            // The month before, recovered now: those requests' windows closed long ago.
            let window = ["--since", NotificationDeliveryTests.iso(start - 29 * Self.day), "--until", NotificationDeliveryTests.iso(start - Self.day)]
            let recovered = try await runFleetCommand(["notifications", "recover"] + window, environment: environment)
            #expect(recovered.status == 0, "\(recovered.output)")
            let missed = try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'missed'")
            #expect(missed > 0 && missed == (try await api.count("SELECT count(*) AS n FROM consumption_requests WHERE deadline < received_at")))
            _ = try await onOwnThread { try ConsumptionResponder(settings: fleet, metrics: FleetMetrics()).answerDue() }
            #expect(store.consumptionAnswers.count == answered, "a missed request is never sent")
        }
    }
}
