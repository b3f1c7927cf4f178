import EventRelay
import Foundation
import Lanes
import PostgresClient
import TestSupport
import Testing

/// Claims, leases and the cap per endpoint: what keeps a slow receiver from holding the database
/// or every dispatcher.
@Suite struct WebhookLeaseTests {
    @Test func noTransactionStaysOpenWhileTheReceiverThinks() async throws {
        let errors = Recorder()
        let receiver = try TestHTTPServer(.hold)
        defer { receiver.stop() }
        let (reached, openTransactions, rowWasFree) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(receiver.port)/", in: world, on: database)
            let dispatchers = startDispatchers(1, in: world, errors: errors)
            defer {
                receiver.stop()  // ends the held request, so the dispatcher can stop
                dispatchers.stop(grace: .seconds(30))
            }
            let reached = eventuallyOnThisThread { receiver.requests.count == 1 }
            let open = try database.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity
                WHERE datname = current_database() AND state LIKE 'idle in transaction%'
                """)[0]["n"].int64()
            let rowWasFree = try database.transaction { database in
                try !database.query(
                    "SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE SKIP LOCKED", [.int64(pending.deliveryID)]
                ).isEmpty
            }
            return (reached, open, rowWasFree)
        }
        #expect(reached)
        #expect(openTransactions == 0, "the dispatcher waits for the receiver outside any transaction")
        #expect(rowWasFree, "and locks no delivery meanwhile")
        #expect(errors.all.isEmpty, "\(errors.all)")
    }

    @Test func aDeadDispatchersDeliveryIsDueAgainAfterItsLeaseAndItsLateAnswerChangesNothing() async throws {
        let errors = Recorder()
        let hanging = try TestHTTPServer(.hold)
        defer { hanging.stop() }
        let failing = try TestHTTPServer(.respond([.init(status: 503)]))
        defer { failing.stop() }
        let (reached, duringLease, afterLease, retakenAt, beforeLateAnswer, stored, attempts) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(hanging.port)/", in: world, on: database)
            let start = TestClock().now
            // The first dispatcher's request hangs: to the others it is as good as dead.
            let first = startDispatchers(1, in: world, now: { start }, errors: errors)
            defer { first.stop(grace: .seconds(30)) }
            let reached = eventuallyOnThisThread { hanging.requests.count == 1 }

            let clock = TestClock()
            let second = try WebhookDispatcher(database: database, configuration: WebhookConfiguration.local(), now: { clock.now })
            let lease = second.configuration.lease.seconds
            clock.now = start + lease - 1
            let duringLease = try second.runOnce()
            // The receiver now answers elsewhere, so that the second attempt gets an answer (a 503:
            // due again in 5 s) while the first still hangs.
            try database.execute(
                "UPDATE webhook_endpoints SET url = $2 WHERE id = $1",
                [.int64(pending.endpointID), .text("http://127.0.0.1:\(failing.port)/")])
            clock.now = start + lease + 1
            let afterLease = try second.runOnce()
            let beforeLateAnswer = try delivery(pending.deliveryID, on: database)

            hanging.stop()  // the first dispatcher's request fails at last, long after its lease
            _ = try eventuallyOnThisThread { try attemptStatuses(pending.deliveryID, on: database).count == 2 }
            return (reached, duringLease, afterLease, clock.now, beforeLateAnswer, try delivery(pending.deliveryID, on: database),
                    try attemptStatuses(pending.deliveryID, on: database))
        }
        #expect(reached)
        #expect(duringLease == 0, "a leased delivery is no one else's")
        #expect(afterLease == 1)
        #expect(failing.requests.count == 1)
        #expect(beforeLateAnswer.state == "pending")
        #expect(beforeLateAnswer.attempts == 1)
        #expect(beforeLateAnswer.nextAttemptAt == retakenAt + 5)
        #expect(stored == beforeLateAnswer, "the first dispatcher's late failure neither counts nor reschedules")
        #expect(Set(attempts) == [nil, 503], "both requests are logged")
        #expect(errors.all.isEmpty, "\(errors.all)")
    }

    @Test func removingAnEndpointWhileItsRequestIsOutIsNoError() async throws {
        let errors = Recorder()
        let receiver = try TestHTTPServer(.hold)
        defer { receiver.stop() }
        let (reached, attemptsLogged) = try await World.with { world in
            let database = try world.connect()
            let pending = try pendingDelivery(to: "http://127.0.0.1:\(receiver.port)/", in: world, on: database)
            let dispatchers = startDispatchers(1, in: world, errors: errors)
            let reached = eventuallyOnThisThread { receiver.requests.count == 1 }
            try WebhookRegistry(database: database).remove(id: pending.endpointID)
            receiver.stop()  // the request fails now, with its delivery gone
            dispatchers.stop(grace: .seconds(30))  // after the dispatcher's round, and so its record
            return (reached, try database.query("SELECT count(*) AS n FROM webhook_attempts")[0]["n"].int64())
        }
        #expect(reached)
        #expect(attemptsLogged == 0)
        #expect(errors.all.isEmpty, "\(errors.all)")
    }

    @Test func twoGoneAnswersAtOnceDisableTheEndpointWithoutADeadlock() async throws {
        let errors = Recorder()
        let receiver = try TestHTTPServer(.respondTogether(2, .init(status: 410)))
        defer { receiver.stop() }
        let (settled, endpointEnabled) = try await World.with { world in
            let database = try world.connect()
            let id = try endpoints(["http://127.0.0.1:\(receiver.port)/"], withDeliveries: 2, in: world, on: database)[0]
            let dispatchers = startDispatchers(2, in: world, errors: errors)
            defer { dispatchers.stop(grace: .seconds(30)) }
            let settled = try eventuallyOnThisThread(within: .seconds(10)) {
                try database.query("SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'failed'")[0]["n"].int64() == 2
            }
            let enabled = try WebhookRegistry(database: database).list().first { $0.id == id }?.isEnabled
            return (settled, enabled)
        }
        #expect(receiver.requests.count == 2)
        #expect(settled)
        #expect(endpointEnabled == false)
        #expect(errors.all.isEmpty, "no deadlock: \(errors.all)")
    }

    @Test func anEndpointThatStopsAnsweringHoldsNoMoreDispatchersThanItsCap() async throws {
        let errors = Recorder()
        let hanging = try TestHTTPServer(.hold)
        defer { hanging.stop() }
        let healthy = try TestHTTPServer(.respond([.init(status: 204)]))
        defer { healthy.stop() }
        let events = 20
        let (delivered, heldRequests, leased) = try await World.with { world in
            let database = try world.connect()
            let ids = try endpoints(
                ["http://127.0.0.1:\(hanging.port)/", "http://127.0.0.1:\(healthy.port)/"], withDeliveries: events,
                in: world, on: database)
            let configuration = WebhookConfiguration.local { ($0.timeout, $0.perEndpointConcurrency) = (.seconds(60), 2) }
            let dispatchers = startDispatchers(4, in: world, configuration: configuration, errors: errors)
            defer {
                hanging.stop()
                dispatchers.stop(grace: .seconds(30))
            }
            // Had a third claim taken the hanging endpoint, the healthy one would not get every delivery.
            let delivered = eventuallyOnThisThread { healthy.requests.count == events }
            // Each claim has a lease end of its own, and sends one request at a time.
            let leased = try database.query(
                "SELECT count(DISTINCT leased_until) AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND leased_until IS NOT NULL",
                [.int64(ids[0])])[0]["n"].int64()
            return (delivered, hanging.requests.count, leased)
        }
        #expect(delivered, "the healthy endpoint got every delivery")
        #expect(heldRequests == 2)
        #expect(leased == 2)
        #expect(errors.all.isEmpty, "\(errors.all)")
    }

    /// A dispatcher claims its share of an endpoint's due deliveries at once (ten due, two claims
    /// allowed: five) and sends them one after another; when one fails it gives the unsent rest
    /// back at once, unattempted, for the next claim.
    @Test func aClaimTakesItsShareAndGivesBackWhatItDidNotSend() async throws {
        let errors = Recorder()
        let hanging = try TestHTTPServer(.hold)
        defer { hanging.stop() }
        let (whileHeld, afterFailure, nextClaimSent) = try await World.with { world in
            let database = try world.connect()
            let id = try endpoints(["http://127.0.0.1:\(hanging.port)/"], withDeliveries: 10, in: world, on: database)[0]
            let leases = {
                try database.query(
                    "SELECT count(*) AS n, count(DISTINCT leased_until) AS claims FROM webhook_deliveries WHERE endpoint_id = $1 AND leased_until IS NOT NULL",
                    [.int64(id)])[0]
            }
            let configuration = WebhookConfiguration.local { ($0.timeout, $0.perEndpointConcurrency) = (.seconds(1), 2) }
            let dispatchers = startDispatchers(1, in: world, configuration: configuration, errors: errors)
            defer {
                hanging.stop()
                dispatchers.stop(grace: .seconds(30))
            }
            _ = eventuallyOnThisThread { hanging.requests.count == 1 }
            let held = try leases()
            let whileHeld = (try held["n"].int64(), try held["claims"].int64())
            // The first request times out: its failure is recorded, the four unsent come back unattempted.
            _ = try eventuallyOnThisThread(within: .seconds(10)) {
                try database.query("SELECT count(*) AS n FROM webhook_attempts")[0]["n"].int64() == 1
            }
            let afterFailure = try database.query(
                "SELECT count(*) FILTER (WHERE attempts = 0) AS fresh, count(*) FILTER (WHERE attempts = 1) AS tried FROM webhook_deliveries")[0]
            let nextClaimSent = eventuallyOnThisThread { hanging.requests.count >= 2 }
            return (whileHeld, (try afterFailure["fresh"].int64(), try afterFailure["tried"].int64()), nextClaimSent)
        }
        #expect(whileHeld.0 == 5 && whileHeld.1 == 1, "one claim of five: \(whileHeld)")
        #expect(afterFailure.0 == 9 && afterFailure.1 == 1, "\(afterFailure)")
        #expect(nextClaimSent, "the next claim took what came back")
        #expect(errors.all.isEmpty, "\(errors.all)")
    }
}
