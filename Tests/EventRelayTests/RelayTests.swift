import EventRelay
import Foundation
import Lanes
import PostgresClient
import RedisClient
import Synchronization
import TestSupport
import Testing

@Suite struct RelayTests {
    @Test func publishesEachEventWithItsFieldsOnceAndMarksItPublished() async throws {
        let (published, again, entries, subscription, eventID, unpublished) = try await World.with { world in
            let database = try world.connect()
            let subscription = try insertSubscriptions(1, on: database)[0]
            let eventID = try insertEvent(
                subscription, type: "refunded", payload: #"{"cancellation_reason": 1, "note": "it's ✓"}"#,
                occurredAt: Date(timeIntervalSince1970: 1_707_696_000.25), on: database)
            let relay = try world.relay()
            let published = try relay.runOnce()
            let again = try relay.runOnce()
            let unpublished = try database.query("SELECT count(*) AS n FROM events WHERE published_at IS NULL")[0]["n"].int64()
            return (published, again, try streamEntries(world.streamKey, on: world.redis()), subscription, eventID, unpublished)
        }
        #expect(published == 1)
        #expect(again == 0)
        #expect(unpublished == 0)
        try #require(entries.count == 1)
        let fields = entries[0].fields
        #expect(fields["id"] == eventID)
        #expect(fields["type"] == "refunded")
        #expect(fields["subscription_id"] == String(subscription))
        #expect(fields["original_transaction_id"] == "otid-1")
        #expect(fields["occurred_at"] == "2024-02-12T00:00:00.250Z")
        let payload = try JSONSerialization.jsonObject(with: Data((fields["payload"] ?? "").utf8)) as? [String: Any]
        #expect(payload?["cancellation_reason"] as? Int == 1)
        #expect(payload?["note"] as? String == "it's ✓")
        #expect(fields["schema_version"] == "1")
        #expect(Set(fields.keys) == ["schema_version", "id", "type", "subscription_id", "original_transaction_id", "occurred_at", "payload"])
    }

    /// Another relay's claim is simulated by a session holding the row lock of a subscription's
    /// first event: its later event must wait, other subscriptions must not.
    @Test func anEventHeldElsewhereHoldsBackItsSubscriptionOnly() async throws {
        let (whileHeld, afterwards, order, expected) = try await World.with { world in
            let database = try world.connect()
            let subscriptions = try insertSubscriptions(2, on: database)
            let first = try insertEvent(subscriptions[0], on: database)
            let second = try insertEvent(subscriptions[0], on: database)
            let other = try insertEvent(subscriptions[1], on: database)

            let holder = try world.connect()
            try holder.execute("BEGIN")
            try holder.execute("SELECT 1 FROM events WHERE id = $1 FOR UPDATE", [.text(first)])
            let relay = try world.relay()
            let whileHeld = try relay.runOnce()
            try holder.execute("ROLLBACK")  // the other relay gave up: its events are free again
            let afterwards = try relay.runOnce()
            let order = try streamEntries(world.streamKey, on: world.redis()).map { $0.fields["id"] ?? "" }
            return (whileHeld, afterwards, order, [other, first, second])
        }
        #expect(whileHeld == 1, "only the other subscription's event may go while the first is held")
        #expect(afterwards == 2)
        #expect(order == expected)
    }

    @Test func twoRelaysPublishEveryEventExactlyOnceInSubscriptionOrder() async throws {
        let result = try await World.with { world in
            let subscriptions = try insertSubscriptions(50, on: world.connect())
            let shared = RelayRace()
            let threads = DispatchGroup()
            for index in 0..<2 {
                threads.enter()
                Thread {
                    defer { threads.leave() }
                    do {
                        let relay = try world.relay()
                        let verifier = try world.connect()
                        while true {
                            let stillWriting = shared.writing.load(ordering: .acquiring)
                            let published = try relay.runOnce(limit: 25)
                            shared.counts.withLock { $0[index] += published }
                            if published == 0, !stillWriting,
                                try verifier.query("SELECT 1 FROM events WHERE published_at IS NULL LIMIT 1").isEmpty
                            { return }
                        }
                    } catch {
                        shared.failures.record("\(error)")
                    }
                }.start()
            }
            // Ten events at a time over random subscriptions, while both relays run.
            let writer = try world.connect()
            for _ in 0..<100 {
                try writer.transaction { writer in
                    for _ in 0..<10 { try insertEvent(subscriptions.randomElement()!, on: writer) }
                }
            }
            shared.writing.store(false, ordering: .releasing)
            threads.wait()

            let sequence = try world.connect().query("SELECT id::text AS id, seq, subscription_id FROM events")
            let seqOf = try Dictionary(uniqueKeysWithValues: sequence.map { (try $0["id"].text() ?? "", try $0["seq"].int64() ?? 0) })
            let entries = try streamEntries(world.streamKey, on: world.redis())
            var seqsBySubscription: [String: [Int64]] = [:]
            for entry in entries {
                seqsBySubscription[entry.fields["subscription_id"] ?? "", default: []].append(seqOf[entry.fields["id"] ?? ""] ?? -1)
            }
            return (
                counts: shared.counts.withLock { $0 }, failures: shared.failures.all,
                streamIDs: entries.map { $0.fields["id"] ?? "" }, eventIDs: Set(seqOf.keys),
                outOfOrder: seqsBySubscription.values.filter { $0 != $0.sorted() }.count)
        }
        #expect(result.failures.isEmpty)
        #expect(result.eventIDs.count == 1_000)
        #expect(result.streamIDs.count == 1_000, "each event once: no more, no fewer")
        #expect(Set(result.streamIDs) == result.eventIDs)
        #expect(result.outOfOrder == 0, "every subscription's events in seq order")
        #expect(result.counts.allSatisfy { $0 > 0 }, "both relays took part: \(result.counts)")
    }

    @Test func aNotificationWakesAWaitingRelayLongBeforeItsPollInterval() async throws {
        let (latency, stoppedWithin, errors) = try await World.with { world in
            let database = try world.connect()
            let redis = try world.redis()
            let subscription = try insertSubscriptions(1, on: database)[0]
            let stop = StopSignal()
            let finished = DispatchSemaphore(value: 0)
            let errors = Recorder()
            Thread {
                do {
                    try world.relay { $0.pollInterval = .seconds(60) }.run(until: stop) { error in
                        errors.record("\(error)")
                    }
                } catch {
                    errors.record("\(error)")
                }
                finished.signal()
            }.start()

            func waitForStream(length: Int) throws {
                try eventuallyOnThisThread(within: .seconds(10), every: .milliseconds(5)) { try redis.command("XLEN", world.streamKey).int ?? 0 >= length }
            }
            // The first event proves the relay is running; after it, the relay is waiting.
            try insertEvent(subscription, on: database)
            try waitForStream(length: 1)
            // Real time: what is measured is how soon a relay that has gone to wait on LISTEN wakes.
            Thread.sleep(forTimeInterval: 0.3)

            let inserted = ContinuousClock.now
            try insertEvent(subscription, on: database)
            try waitForStream(length: 2)
            let latency = ContinuousClock.now - inserted

            let stopping = ContinuousClock.now
            stop.set()
            finished.wait()
            return (latency, ContinuousClock.now - stopping, errors.all)
        }
        #expect(errors.isEmpty)
        #expect(latency < .seconds(2), "woken by NOTIFY, not by the 60 s poll")
        #expect(stoppedWithin < .seconds(2))
    }

    @Test func publishingTrimsEntriesOlderThanTheRetention() async throws {
        let (added, oldLeft, recentLeft, newLeft, nodeSize) = try await World.with { world in
            let redis = try world.redis()
            let nowMS = Int64(Date().timeIntervalSince1970 * 1_000)
            let eightDays: Int64 = 8 * 24 * 3_600_000
            let oneDay: Int64 = 24 * 3_600_000
            var commands: [[any RedisArgument]] = (1...1_000).map { ["XADD", world.streamKey, "\(nowMS - eightDays)-\($0)", "old", "x"] }
            commands += (1...10).map { ["XADD", world.streamKey, "\(nowMS - oneDay)-\($0)", "recent", "x"] }
            let added = try redis.pipeline(commands).count { $0.string != nil }

            let database = try world.connect()
            try insertEvent(try insertSubscriptions(1, on: database)[0], on: database)
            try world.relay { $0.retention = .seconds(7 * 24 * 3_600) }.runOnce()

            let entries = try streamEntries(world.streamKey, on: redis)
            let nodeSize = try redis.command("CONFIG", "GET", "stream-node-max-entries").array?.last?.int ?? 0
            return (added, entries.count { $0.fields["old"] != nil }, entries.count { $0.fields["recent"] != nil },
                    entries.count { $0.fields["type"] != nil }, Int(nodeSize))
        }
        #expect(added == 1_010)
        // MINID ~ drops whole stream nodes: at most the one node shared with newer entries stays.
        #expect(oldLeft <= nodeSize && oldLeft < 1_000)
        #expect(recentLeft == 10)
        #expect(newLeft == 1)
    }

    @Test func aPrefixWithoutAHashTagIsRefused() async throws {
        let error = try await #require(throws: RelayError.self) {
            try await World.with { world in _ = try world.relay { $0.keyPrefix = "rf" } }
        }
        #expect("\(error)".contains("hash tag"))
    }
}

/// What the racing relays of one test share.
private final class RelayRace: Sendable {
    let writing = Atomic<Bool>(true)
    let counts = Mutex<[Int]>([0, 0])
    let failures = Recorder()
}
