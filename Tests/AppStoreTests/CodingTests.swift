import AppStore
import Foundation
import Testing

/// The JSON forms other programs read: stored state, transactions, events.
@Suite struct CodingTests {
    typealias S = Scenario

    func sampleState() throws -> SubscriptionState {
        var refunded = Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))
        (refunded.cancelled, refunded.cancellationReason) = (ms(1_704_800_000_611), 1)
        return try S.stored([refunded], renewals: [Renewal(expirationIntent: 1, graceExpires: S.day(2, 5))], at: S.day(1, 10))
    }

    @Test func stateJSONHasStableSnakeCaseKeysAndISOTimes() throws {
        let state = try sampleState()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970  // must not matter: no field is a Date
        let object = try #require(JSONSerialization.jsonObject(with: encoder.encode(state)) as? [String: Any])
        #expect(Set(object.keys) == [
            "original_transaction_id", "status", "product_id", "latest_transaction_id", "purchased_at", "expires_at",
            "auto_renew", "auto_renew_product_id", "expiration_intent", "grace_period_expires_at", "is_trial",
            "is_intro_offer", "environment", "ownership", "chain_started_at", "cancellation", "refunded_transaction_ids",
            "refunds_read_at", "latest_receipt", "verified_at",
        ])
        #expect(object["status"] as? String == "refunded")
        #expect(object["environment"] as? String == "Production")
        #expect(object["ownership"] as? String == "PURCHASED")
        #expect(object["expires_at"] as? String == "2024-02-01T00:00:00.000Z")
        let cancellation = object["cancellation"] as? [String: Any]
        #expect(cancellation?["cancelled_at"] as? String == "2024-01-09T11:33:20.611Z")
        #expect(cancellation?["reason"] as? Int == 1)
        #expect(object["latest_receipt"] as? String == "UkVDRUlQVA==", "stored in full; it is only redacted when printed")
    }

    @Test func stateRoundTripsExactly() throws {
        let state = try sampleState()
        let decoded = try JSONDecoder().decode(SubscriptionState.self, from: JSONEncoder().encode(state))
        #expect(decoded == state)
    }

    @Test func statusSpellingsAreTheSimulatorsGroundTruth() {
        #expect(SubscriptionStatus.allCases.map(\.rawValue) == [
            "active", "in_grace", "in_billing_retry", "expired", "refunded", "invalid",
        ])
    }

    @Test func theStateNeverPrintsTheReceipt() throws {
        let state = try sampleState()
        var dumped = ""
        dump(state, to: &dumped)
        for text in [String(describing: state), String(reflecting: state), dumped] {
            #expect(!text.contains("UkVDRUlQVA=="))
        }
    }

    @Test func stateJSONForPeopleRedactsTheReceipt() throws {
        let encoder = JSONEncoder()
        encoder.userInfo[ReceiptData.redactInJSON] = true
        let text = String(decoding: try encoder.encode(sampleState()), as: UTF8.self)
        #expect(!text.contains("UkVDRUlQVA=="))
        #expect(text.contains(#""latest_receipt":"<receipt, 12 bytes, redacted>""#))
    }

    @Test func transactionRecordJSON() throws {
        let analysis = try S.analyze(
            stored: nil, S.response([Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))]),
            at: S.day(1, 10))
        let record = try #require(analysis.transactions.first)
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(record)) as? [String: Any])
        #expect(object["transaction_id"] as? String == "1001")
        #expect(object["original_transaction_id"] as? String == S.subscription)
        #expect(object["purchased_at"] as? String == "2024-01-01T00:00:00.000Z")
        #expect(object["is_trial"] as? Bool == false)
        #expect(try JSONDecoder().decode(TransactionRecord.self, from: JSONEncoder().encode(record)) == record)
    }

    @Test func eventJSONAndIdShape() throws {
        let stored = try S.stored([Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))], at: S.day(1, 10))
        let analysis = try S.analyze(
            stored: stored,
            S.response([Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1)),
                        Entry(transactionID: "1002", purchased: S.day(2, 1), expires: S.day(3, 1))]),
            at: S.day(2, 2))
        let event = try #require(analysis.events.first)
        let uuid = try #require(UUID(uuidString: event.id), "the id is UUID-shaped")
        #expect(event.id == event.id.lowercased())
        #expect(uuid.uuid.6 >> 4 == 8, "RFC 9562 version 8")
        #expect(uuid.uuid.8 >> 6 == 0b10, "RFC 9562 variant")

        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(event)) as? [String: Any])
        #expect(Set(object.keys) == ["id", "type", "original_transaction_id", "occurred_at", "payload"])
        #expect(object["type"] as? String == "renewed")
        #expect(object["occurred_at"] as? String == "2024-02-01T00:00:00.000Z")
        #expect((object["payload"] as? [String: Any])?["transaction_id"] as? String == "1002")
        #expect(try JSONDecoder().decode(SubscriptionEvent.self, from: JSONEncoder().encode(event)) == event)
    }

    @Test func idsDifferByTypeSubscriptionAndFacts() throws {
        let entries = [Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1)),
                       Entry(transactionID: "1002", purchased: S.day(2, 1), expires: S.day(3, 1))]
        let stored = try S.stored([entries[0]], at: S.day(1, 10))
        let renewal = try #require(S.analyze(stored: stored, S.response(entries), at: S.day(2, 2)).events.first)

        var otherEntries = entries
        otherEntries[1].transactionID = "1003"
        let otherRenewal = try #require(S.analyze(stored: stored, S.response(otherEntries), at: S.day(2, 2)).events.first)
        #expect(renewal.id != otherRenewal.id)
        #expect(Set(SubscriptionEventType.allCases.map(\.rawValue)).count == SubscriptionEventType.allCases.count)
    }
}
