import EventRelay
import Foundation
import PostgresClient
import TestSupport
import Testing

@Suite struct WebhookDeliveryTests {
    @Test func aDeliveryIsSignedSoThatAnIndependentImplementationVerifiesIt() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { server.stop() }
        let (pending, attemptedAt, state) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/hooks", in: world, on: database)
            let clock = TestClock()
            try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local(), now: { clock.now }).runOnce()
            return (pending, clock.now, try delivery(pending.deliveryID, on: database).state)
        }
        let request = try #require(server.requests.first)
        let id = try #require(request.headers["webhook-id"])
        let timestamp = try #require(request.headers["webhook-timestamp"])
        let signature = try #require(request.headers["webhook-signature"])
        #expect(id == pending.eventID)
        #expect(timestamp == String(Int64(attemptedAt.timeIntervalSince1970)))
        #expect(signature.hasPrefix("v1,"))
        #expect(request.target == "/hooks")
        #expect(request.headers["content-type"] == "application/json")
        let event = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        #expect(event?["schema_version"] as? Int == 1)
        #expect(event?["id"] as? String == pending.eventID)
        #expect(event?["type"] as? String == "renewed")
        #expect(event?["original_transaction_id"] as? String == "otid-1")
        #expect((event?["payload"] as? [String: Any])?["transaction_id"] as? String == "1002")
        #expect(state == "delivered")

        let secret = pending.secret.text
        let (verdict, tampered) = try await onOwnThread {
            (try pythonVerdict(secret: secret, id: id, timestamp: timestamp, signature: signature, body: request.body),
             try pythonVerdict(secret: secret, id: id, timestamp: timestamp, signature: signature, body: request.body + [0x20]))
        }
        #expect(verdict == "valid")
        #expect(tampered == "invalid", "the check must be able to fail")
    }

    @Test func failuresAreRetriedOnTheScheduleUntilA2xxAnswer() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 500), .init(status: 500), .init(status: 200)]))
        defer { server.stop() }
        let (log, statuses) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/", in: world, on: database)
            let clock = TestClock()
            let dispatcher = try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local(), now: { clock.now })
            let log = try drive(dispatcher, delivery: pending.deliveryID, at: [0, 4, 5, 304, 305, 90_000], clock: clock, on: database)
            return (log, try attemptStatuses(pending.deliveryID, on: database))
        }
        #expect(log == [
            "t+0: made 1, pending after 1, next t+5",
            "t+4: made 0, pending after 1, next t+5",
            "t+5: made 1, pending after 2, next t+305",
            "t+304: made 0, pending after 2, next t+305",
            "t+305: made 1, delivered after 3, next t+305",
            "t+90000: made 0, delivered after 3, next t+305",
        ])
        #expect(statuses == [500, 500, 200])
        #expect(server.requests.count == 3)
    }

    @Test func aDeliveryFailsForGoodWhenTheScheduleIsUsedUp() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 503)]))
        defer { server.stop() }
        let log = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/", in: world, on: database)
            let clock = TestClock()
            let configuration = WebhookConfiguration.local { $0.retryDelays = [.seconds(1), .seconds(2)] }
            let dispatcher = try WebhookDispatcher(database: database, configuration: configuration, now: { clock.now })
            return try drive(dispatcher, delivery: pending.deliveryID, at: [0, 1, 3, 3_600], clock: clock, on: database)
        }
        #expect(log == [
            "t+0: made 1, pending after 1, next t+1",
            "t+1: made 1, pending after 2, next t+3",
            "t+3: made 1, failed after 3, next t+3",
            "t+3600: made 0, failed after 3, next t+3",
        ])
        #expect(server.requests.count == 3)
    }

    @Test func aLaterRetryAfterWinsOverTheScheduleUpToItsLongestDelay() async throws {
        let start = TestClock().now
        let server = try TestHTTPServer(.respond([
            .init(status: 503, headers: [("Retry-After", "120")]),  // later than 5 s
            .init(status: 503, headers: [("Retry-After", httpDate(start + 4_000))]),  // a date, later than 5 min
            .init(status: 429, headers: [("Retry-After", "1")]),  // earlier than 30 min: the schedule wins
            .init(status: 503, headers: [("Retry-After", "999999")]),  // capped at the longest delay, 10 h
            .init(status: 200),
        ]))
        defer { server.stop() }
        let log = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/", in: world, on: database)
            // Due at `start` (a minute ahead when it was read), however long making the database took
            // on a loaded machine: the schedule below counts from there.
            try database.execute(
                "UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = $1", [.int64(pending.deliveryID), .timestamptz(start)])
            let clock = TestClock()
            clock.now = start
            let dispatcher = try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local(), now: { clock.now })
            return try drive(dispatcher, delivery: pending.deliveryID, at: [0, 5, 120, 4_000, 5_800, 41_800], clock: clock, on: database)
        }
        #expect(log == [
            "t+0: made 1, pending after 1, next t+120",
            "t+5: made 0, pending after 1, next t+120",
            "t+120: made 1, pending after 2, next t+4000",
            "t+4000: made 1, pending after 3, next t+5800",
            "t+5800: made 1, pending after 4, next t+41800",
            "t+41800: made 1, delivered after 5, next t+41800",
        ])
    }

    @Test func goneDisablesTheEndpointAndStopsItsDeliveries() async throws {
        let server = try TestHTTPServer(.respond([.init(status: 410)]))
        defer { server.stop() }
        let (made, later, endpoint, states, deliveriesAfterNewEvent) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/", in: world, on: database)
            try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
            try world.relay().runOnce()  // a second pending delivery to the same endpoint

            let clock = TestClock()
            let dispatcher = try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local(), now: { clock.now })
            let made = try dispatcher.runOnce()
            let endpoint = try WebhookRegistry(database: database).list().first { $0.id == pending.endpointID }
            let states = try database.query("SELECT state FROM webhook_deliveries ORDER BY id").map { try $0["state"].text() ?? "" }

            try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
            try world.relay().runOnce()
            clock.now += 86_400
            let later = try dispatcher.runOnce()
            let count = try database.query("SELECT count(*) AS n FROM webhook_deliveries")[0]["n"].int64()
            return (made, later, endpoint, states, count)
        }
        #expect(made == 1)
        #expect(server.requests.count == 1, "the second delivery was never sent")
        #expect(endpoint?.isEnabled == false)
        #expect(endpoint?.disabledReason?.contains("410 Gone") == true)
        #expect(states == ["failed", "failed"])
        #expect(deliveriesAfterNewEvent == 2, "a disabled endpoint gets no new deliveries")
        #expect(later == 0)
    }

    @Test func anEndlessAnswerIsReadOnlyUpToItsCapAndStillCounts() async throws {
        let server = try TestHTTPServer(.endlessBody)
        defer { server.stop() }
        let stored = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/", in: world, on: database)
            let clock = TestClock()
            try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local { $0.timeout = .seconds(5) }, now: { clock.now })
                .runOnce()
            return try delivery(pending.deliveryID, on: database)
        }
        #expect(stored.state == "delivered", "the 200 counts; the body past 64 KiB is never read")
    }

    @Test(arguments: [302, 400, 500])
    func anythingButA2xxIsAFailure(status: Int) async throws {
        let elsewhere = try TestHTTPServer()
        defer { elsewhere.stop() }
        let server = try TestHTTPServer(.respond([
            .init(status: status, headers: [("Location", "http://127.0.0.1:\(elsewhere.port)/")]),
        ]))
        defer { server.stop() }
        let (stored, error) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(server.port)/", in: world, on: database)
            let clock = TestClock()
            try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local(), now: { clock.now }).runOnce()
            let error = try firstRow(of: database.query("SELECT error FROM webhook_attempts"), "the attempt")["error"].text()
            return (try delivery(pending.deliveryID, on: database), error)
        }
        #expect(stored.state == "pending")
        #expect(stored.attempts == 1)
        #expect(error?.contains("\(status)") == true)
        #expect(server.requests.count == 1)
        #expect(elsewhere.requests.isEmpty, "redirects are not followed")
    }
}
