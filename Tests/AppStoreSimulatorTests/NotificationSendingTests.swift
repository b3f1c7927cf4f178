@testable import AppStoreSimulator
import Crypto
import Foundation
import TestSupport
import Testing

/// The simulator sends its notifications as Apple does: as its clock passes them, failed ones
/// again on Apple's schedule (production only), and with the knobs' failures and silences.
@Suite struct NotificationSendingTests {
    static let hour: Int64 = 3_600_000

    @Test func failedSendsAreTriedAgainOnApplesScheduleAndSilencedChangesNeverLeave() async throws {
        let (receiver, clock, setup, store) = try Self.simulator(subscriptions: 300)
        defer { receiver.stop() }
        try store.sendNotifications(
            to: "http://127.0.0.1:\(receiver.port)/", knobs: NotificationKnobs(failShare: 0.5, unannouncedShare: 0.2))

        clock.advance(byMs: 20 * day)
        await store.sendDueNotifications()
        let all = try await Self.sent(from: anchorMs, until: anchorMs + 20 * day, setup: setup)
        let silent = all.filter { !store.sender.announces($0.uuid, signedAtMs: $0.signedDateMs) }
        let announced = all.filter { store.sender.announces($0.uuid, signedAtMs: $0.signedDateMs) }
        #expect(all.count > 100, "a fleet of 300 changes often in 20 days: \(all.count)")
        #expect(Double(silent.count) / Double(all.count) > 0.1 && Double(silent.count) / Double(all.count) < 0.3)
        #expect(silent.allSatisfy { store.sender.attempts(of: $0.uuid).isEmpty }, "an unannounced change is never sent")
        #expect(announced.allSatisfy { store.sender.attempts(of: $0.uuid).count == 1 }, "each announced one is tried once")
        let failed = announced.filter { store.sender.attempts(of: $0.uuid)[0].result != "SUCCESS" }
        #expect(receiver.requests.count == announced.count - failed.count, "what did not fail reached the receiver")
        #expect(Double(failed.count) / Double(announced.count) > 0.35 && Double(failed.count) / Double(announced.count) < 0.65)
        #expect(store.sender.configuration.counts.failedBy == ["fail_share": failed.count], "the knob failed them, not the receiver")
        // What serve missed, once each: every silent change and every change whose first send failed.
        let missed = store.sender.missed.map { "\($0.why.rawValue) \($0.originalTransactionID) \($0.type) \($0.atMs)" }.sorted()
        let changes = { (why: String, notifications: [SimulatedNotification]) in
            notifications.filter { $0.type != "CONSUMPTION_REQUEST" }.map { "\(why) \($0.transaction.originalTransactionID) \($0.type) \($0.signedDateMs)" }
        }
        #expect(missed == (changes("unannounced", silent) + changes("send_failed", failed)).sorted())

        // Apple's schedule: 1, 12, 24, 48 and 72 hours after the previous attempt, five retries at most.
        var at = clock.nowMs
        for hours in NotificationSender.retryHours + [200] {
            clock.advance(byMs: hours * Self.hour - 1)
            await store.sendDueNotifications()
            #expect(failed.allSatisfy { store.sender.attempts(of: $0.uuid).last!.atMs <= at }, "not a millisecond early")
            clock.advance(byMs: 1)
            await store.sendDueNotifications()
            at += hours * Self.hour
        }
        for notification in failed {
            let attempts = store.sender.attempts(of: notification.uuid)
            if notification.environment == .sandbox {
                #expect(attempts.count == 1, "the sandbox sends once")
                continue
            }
            let gaps = zip(attempts.dropFirst(), attempts).map { ($0.atMs - $1.atMs) / Self.hour }
            #expect(Array(gaps) == Array(NotificationSender.retryHours.prefix(gaps.count)))
            #expect(attempts.last!.result == "SUCCESS" || attempts.count == 6, "tried until it got through, or six times")
        }
        #expect(failed.contains { store.sender.attempts(of: $0.uuid).count > 2 }, "some failed again and were tried later still")
        let since = try await Self.sent(from: anchorMs, until: clock.nowMs + 1, setup: setup)
        let delivered = since.filter { store.sender.attempts(of: $0.uuid).contains { $0.result == "SUCCESS" } }
        #expect(receiver.requests.count == delivered.count, "each reached the receiver once, when it got through")
        let missedSince = store.sender.missed.map { "\($0.originalTransactionID) \($0.type) \($0.atMs)" }
        #expect(Set(missedSince).count == missedSince.count, "a failed retry misses nothing more: each change is missed once")
    }

    /// Faults for a while only: changes before the end stay unannounced or failed as drawn, and every
    /// change after it is announced and delivered at its first attempt.
    @Test func theFaultsEndWhenTheirTimeDoesAndEverythingAfterIsDelivered() async throws {
        let (receiver, clock, setup, store) = try Self.simulator(subscriptions: 300)
        defer { receiver.stop() }
        let end = anchorMs + 10 * day
        try store.sendNotifications(
            to: "http://127.0.0.1:\(receiver.port)/", knobs: NotificationKnobs(failShare: 0.5, unannouncedShare: 0.2, faultsUntilMs: end))
        clock.advance(byMs: 10 * day)
        await store.sendDueNotifications()
        let missedBefore = store.sender.missed.count
        #expect(missedBefore > 20, "the faults applied until their end: \(missedBefore) missed")

        clock.advance(byMs: 10 * day)
        await store.sendDueNotifications()
        let after = try await Self.sent(from: end, until: clock.nowMs, setup: setup).filter { $0.signedDateMs >= end }
        #expect(after.count > 50, "a fleet of 300 changes often in 10 days: \(after.count)")
        #expect(after.allSatisfy { store.sender.attempts(of: $0.uuid).first?.result == "SUCCESS" }, "every change after the end is delivered at once")
        #expect(store.sender.missed.allSatisfy { $0.atMs < end }, "nothing after the end is missed")
    }

    /// A delay holds each notification back from its event; serve out of reach fails every
    /// attempt meanwhile, and Apple's retry brings it in once it is back.
    @Test func aDelayAndAnUnreachableServeAreKnobsOfTheirOwn() async throws {
        let (receiver, clock, setup, store) = try Self.simulator(subscriptions: 100)
        defer { receiver.stop() }
        #expect(throws: KnobsError.self) { try store.sendNotifications(to: "http://127.0.0.1:1/", knobs: NotificationKnobs(failShare: 2)) }
        try store.sendNotifications(
            to: "http://127.0.0.1:\(receiver.port)/", knobs: NotificationKnobs(delayMs: 2 * Self.hour, unreachableUntilMs: anchorMs + 3 * day))
        clock.advance(byMs: 2 * day)
        await store.sendDueNotifications()
        let production = try await Self.sent(from: anchorMs - 2 * Self.hour, until: anchorMs + 2 * day, setup: setup, only: .production)
        let tried = production.filter { !store.sender.attempts(of: $0.uuid).isEmpty }
        #expect(!tried.isEmpty && tried.allSatisfy { $0.signedDateMs < clock.nowMs - 2 * Self.hour }, "nothing before its delay passed")
        #expect(receiver.requests.isEmpty, "serve could not be reached")
        #expect(tried.allSatisfy { store.sender.attempts(of: $0.uuid)[0].result == "NO_RESPONSE" })
        let counts = store.sender.configuration.counts
        #expect(counts.failed >= tried.count && counts.failedBy == ["unreachable": counts.failed], "both environments' sends")
        clock.advance(byMs: 2 * day)
        await store.sendDueNotifications()
        #expect(tried.allSatisfy { store.sender.attempts(of: $0.uuid).last?.result == "SUCCESS" }, "a retry after serve came back got through")
    }

    /// A send serve answered with anything but 200 is counted by its status, apart from the
    /// knobs' failures: a benchmark tells load or a fault from what it asked for.
    @Test func failuresOfServesOwnAreCountedByTheirStatus() async throws {
        let (receiver, clock, setup, store) = try Self.simulator(
            subscriptions: 50, receiving: .respond([TestHTTPServer.Response(status: 503)]))
        defer { receiver.stop() }
        try store.sendNotifications(to: "http://127.0.0.1:\(receiver.port)/", knobs: NotificationKnobs())
        clock.advance(byMs: 5 * day)
        await store.sendDueNotifications()
        let counts = store.sender.configuration.counts
        #expect(counts.failed > 0 && counts.failed == receiver.requests.count, "every send reached serve, and failed")
        #expect(counts.failedBy == ["HTTP 503": counts.failed])
        let tried = try await Self.sent(from: anchorMs, until: clock.nowMs, setup: setup).flatMap { store.sender.attempts(of: $0.uuid) }
        #expect(!tried.isEmpty && tried.allSatisfy { $0.result == "UNSUCCESSFUL_HTTP_RESPONSE_CODE" }, "Apple's result for it")
    }

    /// The first app's notifications in a window, worked out on a thread of its own: a fleet's
    /// timelines would hold one of Swift's two pool threads, which the other suites' servers need.
    /// The history and the sender cut their windows from a span worked out once: a window cut so
    /// is the window worked out alone, notification for notification.
    @Test func aWindowCutFromAWorkedOutSpanIsTheWindowAlone() async throws {
        let setup = ServerAPISimulation(publicKey: P256.Signing.PrivateKey().publicKey, seeds: [11], anchorMs: anchorMs, subscriptions: [80])
        let wide = try await Self.sent(from: anchorMs - 20 * day, until: anchorMs + 5 * day, setup: setup, only: .production)
        let cut = try await Self.sent(from: anchorMs - 3 * day - 7, until: anchorMs + 2 * day + 11, setup: setup, only: .production)
        let alone = SimulatedReceipt.fleet(count: 80, seed: 11, anchorMs: anchorMs).filter { $0.token.environment == .production }
            .flatMap { $0.notifications(from: anchorMs - 3 * day - 7, until: anchorMs + 2 * day + 11) }
            .sorted { ($0.signedDateMs, $0.uuid) < ($1.signedDateMs, $1.uuid) }
        #expect(!alone.isEmpty && wide.count > alone.count)
        #expect(cut.map(\.uuid) == alone.map(\.uuid))
    }

    /// A receiver, and a simulator of `subscriptions` on a stopped clock at the anchor.
    /// Apple sends many notifications at once, each subscription's in order: a receiver that answers
    /// only once two requests are in hand gets every one at the first attempt (one at a time, the first
    /// would wait for it until its timeout), and each subscription's arrive oldest first.
    @Test func notificationsGoSeveralAtOnceEachSubscriptionsInOrder() async throws {
        let (receiver, clock, setup, store) = try Self.simulator(subscriptions: 100, receiving: .respondTogether(2, .init(status: 200)))
        defer { receiver.stop() }
        try store.sendNotifications(to: "http://127.0.0.1:\(receiver.port)/")
        clock.advance(byMs: 10 * day)
        await store.sendDueNotifications()
        let all = try await Self.sent(from: anchorMs, until: anchorMs + 10 * day, setup: setup)
        #expect(all.count > 20, "a fleet of 100 changes often in 10 days: \(all.count)")
        #expect(all.allSatisfy { store.sender.attempts(of: $0.uuid).map(\.result) == ["SUCCESS"] })

        let byUUID = Dictionary(uniqueKeysWithValues: all.map { ($0.uuid, $0) })
        let arrived = try receiver.requests.map { request in
            let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: String])
            let segment = try #require(body["signedPayload"]?.split(separator: ".").dropFirst().first)
            var payload = String(segment).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while payload.count % 4 != 0 { payload += "=" }
            let decoded = try #require(Data(base64Encoded: payload))
            let claims = try #require(try JSONSerialization.jsonObject(with: decoded) as? [String: Any])
            let uuid = try #require(claims["notificationUUID"] as? String)
            return try #require(byUUID[uuid])
        }
        #expect(arrived.count == all.count)
        for (subscription, notifications) in Dictionary(grouping: arrived, by: { $0.transaction.originalTransactionID }) {
            #expect(notifications.map(\.signedDateMs) == notifications.map(\.signedDateMs).sorted(), "\(subscription) in order")
        }
    }

    static func simulator(
        subscriptions: Int, receiving behavior: TestHTTPServer.Behavior = .echo
    ) throws -> (TestHTTPServer, SimulatorClock, ServerAPISimulation, SimulatedAppStore) {
        let receiver = try TestHTTPServer(behavior)
        let clock = SimulatorClock(startMs: anchorMs)
        clock.set(nowMs: anchorMs, stopped: true)
        let setup = ServerAPISimulation(
            publicKey: P256.Signing.PrivateKey().publicKey, seeds: [1], anchorMs: anchorMs, subscriptions: [subscriptions])
        return (receiver, clock, setup, try SimulatedAppStore(clock: clock, serverAPI: setup))
    }

    static func sent(
        from start: Int64, until end: Int64, setup: ServerAPISimulation, only environment: SimulatedEnvironment? = nil
    ) async throws -> [SimulatedNotification] {
        try await onOwnThread {
            [SimulatedEnvironment.production, .sandbox].filter { environment == nil || $0 == environment }.flatMap {
                NotificationHistoryEndpoint.sent(app: 0, from: start, until: end, endpoint: $0, setup: setup)
            }
        }
    }

    /// A benchmark holds the ledger against the truth: `GET /control/truth` lists every subscription of
    /// the fleet with its status at the simulator's time, as its lifecycle says.
    @Test func theTruthRouteListsTheFleetsStatusesNow() async throws {
        let clock = SimulatorClock(startMs: anchorMs)
        clock.set(nowMs: anchorMs + 9 * day, stopped: true)
        let setup = ServerAPISimulation(publicKey: P256.Signing.PrivateKey().publicKey, seeds: [1], anchorMs: anchorMs, subscriptions: [50])
        let store = try SimulatedAppStore(clock: clock, serverAPI: setup)
        let answer = try await withClient(store) { client in try await client.execute(uri: "/control/truth", method: .get) }
        let reading = try #require(jsonObject(answer.body))
        let statuses = try #require(reading["statuses"] as? [String: String])
        let fleet = SimulatedReceipt.fleet(count: 50, seed: 1, anchorMs: setup.anchorMs).flatMap(\.subscriptions)
        #expect(reading["now_ms"] as? Int64 == anchorMs + 9 * day)
        #expect(statuses.count == Set(fleet.map(\.originalTransactionID)).count)
        #expect(fleet.allSatisfy { statuses[$0.originalTransactionID] == $0.groundTruth(at: anchorMs + 9 * day).status.rawValue })
        #expect(Set(statuses.values).count > 2, "a fleet of every kind is in several states")

        let without = try makeSimulator()
        let none = try await withClient(without) { client in try await client.execute(uri: "/control/truth", method: .get) }
        #expect(none.status == .notFound)
    }
}
