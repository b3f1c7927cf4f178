import AppStore
@testable import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Observability
import RedisClient
import TestSupport
import Testing

/// The slots a worker process books and shares among its workers (`SlotPool`).
@Suite struct SlotPoolTests {
    @Test func theEarliestGoodSlotIsTakenAndThoseTooLateAreDropped() {
        let pool = SlotPool(tolerance: .milliseconds(10))
        let now = ContinuousClock.now
        // The booking worker keeps the first; the others wait on the shelf, earliest first.
        pool.keep([now, now + .seconds(2), now - .milliseconds(50), now + .seconds(1)], for: .verifyReceipt, at: now)
        #expect(pool.take(.verifyReceipt, at: now) == now + .seconds(1), "the one 50 ms past its slot is given up")
        #expect(pool.take(.subscriptionStatuses, at: now) == nil, "each endpoint has its own")
        #expect(pool.recentDemand(for: .verifyReceipt, at: now) == 2, "the booking worker's slot and the one taken")
        let late = now + .seconds(2) + .milliseconds(10)
        #expect(pool.take(.verifyReceipt, at: late) == now + .seconds(2), "a slot is good until its tolerance ends")
        #expect(pool.take(.verifyReceipt, at: late) == nil)
        #expect(pool.recentDemand(for: .verifyReceipt, at: late) == 1, "only the slot taken within the last window")

        pool.keep([now, now + .seconds(1)], for: .verifyReceipt, at: now)
        pool.drop(.verifyReceipt)
        #expect(pool.take(.verifyReceipt, at: now) == nil, "a 429 or a halt gives them all up")
    }

    @Test func demandIsTheLastToleranceWindows() throws {
        let pool = SlotPool(tolerance: .milliseconds(10))
        let now = ContinuousClock.now
        pool.keep([now], for: .verifyReceipt, at: now)
        #expect(pool.recentDemand(for: .verifyReceipt, at: now + .milliseconds(10)) == 1)
        #expect(pool.recentDemand(for: .verifyReceipt, at: now + .milliseconds(11)) == 0)
    }

    /// Eight workers asking for calls as fast as they can, through one process's pool: the
    /// admissions book what the process took in the last 5 ms, so Redis is asked a small share
    /// of the times (booking one slot each, as one-at-a-time calls did, it was asked every time).
    /// On a loaded machine some admissions are read too late for their slots and asked again:
    /// those are counted apart, as slots given up.
    @Test func workersAskingAtOnceShareOneAdmissionsSlots() async throws {
        try await TestDatabase.with { database in
            let settings = try FleetSettings.forTest(
                redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("pool"))}",
                rateLimit: try RateLimit(perSecond: 100_000, burst: 100))
            let pool = SlotPool(tolerance: PacedGate.slotTolerance)
            let metrics = FleetMetrics()
            let (workers, calls) = (8, 200)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<workers {
                    group.addTask {
                        try await onOwnThread {
                            let connections = try Connections(settings: settings, consumer: "pool-\(index)")
                            let gate = PacedGate(
                                connections: connections, settings: settings, stop: StopSignal(), pauses: PauseBoard(clock: SystemClock()), slots: pool,
                                metrics: metrics)
                            for _ in 0..<calls {
                                guard case .granted = try gate.admit(upcoming: 1, to: .verifyReceipt, forApp: nil) else {
                                    throw QueueError.invalidArgument("not granted")
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let redis = try RedisConnection(RedisConfiguration(url: settings.redisURL))
            let keys = try QueueKeys(prefix: settings.keyPrefix)
            let admissions = try #require(try redis.command("GET", keys.gateAdmissions).string.flatMap { Int($0) })
            let granted = try #require(try redis.command("GET", keys.limiterGranted).string.flatMap { Int($0) })
            #expect(granted >= workers * calls, "every call had a slot")
            let givenUp = metrics.takeSlotsGivenUp()
            #expect(
                (admissions - givenUp) * 4 < workers * calls,
                "\(admissions) admissions, \(givenUp) slots given up, for \(workers * calls) calls")
        }
    }

    /// A call leaves on its slot, or not at all: one that would leave more than the tolerance after
    /// it (its thread preempted after it woke) gives the slot up as it leaves and books another.
    /// (On a loaded machine an admission may also be read too late for its slot: each one given up
    /// so is one admission more, so the test counts the admissions that kept their slots.)
    @Test func aCallPreemptedAfterItsSlotBooksAnotherAsItLeaves() async throws {
        try await TestDatabase.with { database in
            let settings = try FleetSettings.forTest(
                redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("depart"))}",
                rateLimit: try RateLimit(perSecond: 1_000, burst: 1))
            try await onOwnThread {
                let connections = try Connections(settings: settings, consumer: "depart-0")
                let metrics = FleetMetrics()
                let gate = PacedGate(
                    connections: connections, settings: settings, stop: StopSignal(), pauses: PauseBoard(clock: SystemClock()),
                    slots: SlotPool(tolerance: PacedGate.slotTolerance), metrics: metrics)
                let redis = try RedisConnection(RedisConfiguration(url: settings.redisURL))
                let key = try QueueKeys(prefix: settings.keyPrefix).gateAdmissions
                var givenUp = 0
                /// Admissions so far, and slots given up so far.
                func counts() throws -> (admissions: Int, givenUp: Int) {
                    givenUp += metrics.takeSlotsGivenUp()
                    return (try redis.command("GET", key).string.flatMap { Int($0) } ?? 0, givenUp)
                }
                func admitted() throws -> Bool {
                    if case .granted = try gate.admit(upcoming: 1, to: .verifyReceipt, forApp: nil) { true } else { false }
                }

                #expect(try admitted())
                #expect(try gate.departing(to: .verifyReceipt, forApp: nil) == .granted(slots: [.zero]))
                let onTime = try counts()
                #expect(onTime.admissions - onTime.givenUp == 1, "on time: it leaves on its slot")

                // Real time (here and below): the gate places slots by Redis's replies, on the monotonic clock.
                Thread.sleep(forTimeInterval: 0.05)  // the slots the admission booked for others go stale
                #expect(try admitted())
                let before = try counts()
                #expect(before.admissions - before.givenUp == 2)
                Thread.sleep(forTimeInterval: 0.05)  // preempted after it woke for its slot
                #expect(try gate.departing(to: .verifyReceipt, forApp: nil) == .granted(slots: [.zero]))
                let after = try counts()
                #expect(after.admissions > before.admissions, "the late call booked another slot as it left")
                #expect(after.givenUp > before.givenUp)
                #expect(after.admissions - after.givenUp == 2, "each admission more is a slot given up")
            }
        }
    }

    /// An admission read late (here: Redis's replies held 100 ms on their way back, as if the thread
    /// had waited that long for a CPU) places its slot by the reply's own time, so the slot has
    /// passed and is given up. Replies that stay that slow are a network that got slower: the
    /// process's `RedisClock` follows it within seconds, and calls go on.
    @Test func anAdmissionReadLateGivesUpItsSlotUntilTheSlowerReplyIsTheNorm() async throws {
        let proxy = try FreezableProxy.forTestRedis()
        defer { proxy.stop() }
        try await TestDatabase.with { database in
            let settings = try FleetSettings.forTest(
                redisURL: proxy.carrying(TestServers.redisURL), postgresURL: database.url,
                keyPrefix: "{\(uniqueName("late"))}", rateLimit: try RateLimit(perSecond: 1_000, burst: 1))
            try await onOwnThread {
                let metrics = FleetMetrics()
                let gate = PacedGate(
                    connections: try Connections(settings: settings, consumer: "late-0"), settings: settings, stop: StopSignal(),
                    pauses: PauseBoard(clock: SystemClock()), slots: SlotPool(tolerance: PacedGate.slotTolerance), metrics: metrics)
                func admitted() throws -> Bool {
                    if case .granted = try gate.admit(upcoming: 1, to: .verifyReceipt, forApp: nil) { true } else { false }
                }
                for _ in 0..<20 { #expect(try admitted()) }  // the prompt replies: the process's reference
                // Real time: the gate places slots by Redis's replies, on the monotonic clock.
                Thread.sleep(forTimeInterval: 0.05)  // the slots they booked for others go stale
                _ = metrics.takeSlotsGivenUp()

                proxy.holdReplies(for: .milliseconds(100))
                let started = ContinuousClock.now
                #expect(try admitted())
                let waited = started.duration(to: .now)
                let givenUp = metrics.takeSlotsGivenUp()
                #expect(givenUp >= 3, "the late readings' slots had passed: \(givenUp) given up")
                #expect(waited < .seconds(10), "the slower replies became the reference within seconds: \(waited)")
                for _ in 0..<5 { #expect(try admitted()) }
                // (A few may still be given up by a thread the machine's load wakes late; not
                // following the slower replies, each of these would give up dozens.)
                #expect(metrics.takeSlotsGivenUp() < 10, "once they are the norm, they keep their slots")
            }
        }
    }

    /// The same through a worker process's pool, verifying receipts against the simulator: fewer
    /// admissions than calls (each worker booking for itself asked once a call here, and once more
    /// for each slot it gave up: on a loaded machine, threads read their admissions late), and
    /// every call Apple saw had a slot.
    @Test func aProcessesWorkersShareTheSlotsOneBooks() async throws {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 300, rateLimit: 100_000)
                setup.settings.concurrency = 8
                _ = try await setup.load()
                let metrics = ProcessMetrics()
                let status = try await setup.work(metrics: metrics)
                #expect(status.isSettled)
                let givenUp = metrics.fleet.takeSlotsGivenUp() + (try starvedWorkersSlots(setup.settings))
                let redis = try RedisConnection(RedisConfiguration(url: setup.settings.redisURL))
                let keys = try QueueKeys(prefix: setup.settings.keyPrefix)
                let granted = try #require(try redis.command("GET", keys.limiterGranted).string.flatMap { Int($0) })
                let admissions = try #require(try redis.command("GET", keys.gateAdmissions).string.flatMap { Int($0) })
                let requests = simulator.store.statistics.requestsTotal
                #expect(requests <= granted, "\(requests) requests, \(granted) slots")
                #expect(admissions - givenUp < requests, "\(admissions) admissions, \(givenUp) slots given up, for \(requests) calls")
            }
        }
    }
}

/// The slots a process gave up reach the fleet's count through the heartbeat, even across a Redis failure.
@Suite struct SlotsGivenUpTests {
    @Test func slotsTheHeartbeatCouldNotTellAreToldByTheNextOne() throws {
        let metrics = FleetMetrics()
        for _ in 0..<3 { metrics.gaveUpSlot() }
        // Nothing listens on port 1: the report fails as when Redis is down.
        let deadRedis = try RedisConnection(RedisConfiguration(url: "redis://127.0.0.1:1"), connectingNow: false)
        let keys = try QueueKeys(prefix: "{\(uniqueName("given-up"))}")
        let down = try JobQueue(connection: deadRedis, keys: keys, consumer: "given-up-0", preparingGroups: false)
        #expect(throws: QueueError.self) { try Heartbeat.tellSlotsGivenUp(metrics, through: down) }

        metrics.gaveUpSlot()
        let live = try JobQueue(
            connection: try RedisConnection(RedisConfiguration(url: TestServers.redisURL)), keys: keys, consumer: "given-up-0",
            preparingGroups: false)
        try Heartbeat.tellSlotsGivenUp(metrics, through: live)
        #expect(try live.starvedWorkers().map(\.slotsGivenUp) == [4], "the 3 the failed heartbeat took, and the one since")
        try Heartbeat.tellSlotsGivenUp(metrics, through: live)
        #expect(try live.starvedWorkers().map(\.slotsGivenUp) == [4], "each told once")
    }

    /// A process stopped between two beats (5 s apart) tells the slots it gave up since the last one.
    @Test func aStoppingProcessTellsTheSlotsItGaveUpSinceItsLastBeat() async throws {
        try await TestDatabase.with { database in
            let settings = try FleetSettings.forTest(
                redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("last-beat"))}",
                rateLimit: try RateLimit(perSecond: 100, burst: 1))
            let queue = try JobQueue(
                connection: try RedisConnection(RedisConfiguration(url: settings.redisURL)),
                keys: try QueueKeys(prefix: settings.keyPrefix), consumer: "last-beat", preparingGroups: false)
            let metrics = ProcessMetrics()
            let worker = RunningServices.worker(settings: settings, metrics: metrics)
            try await worker.whileRunning {
                try #require(try await eventually { try !queue.processes().isEmpty })  // its first beat
                for _ in 0..<3 { metrics.fleet.gaveUpSlot() }
            }
            #expect(try queue.starvedWorkers().map(\.slotsGivenUp) == [3])
            #expect(try queue.processes().isEmpty, "a process that stops cleanly says goodbye: it is not silent")
        }
    }
}

/// The slots the processes of `settings`' deployment told the fleet they gave up (their heartbeats).
private func starvedWorkersSlots(_ settings: FleetSettings) throws -> Int {
    let queue = try JobQueue(
        connection: try RedisConnection(RedisConfiguration(url: settings.redisURL)), keys: try QueueKeys(prefix: settings.keyPrefix),
        consumer: "given-up-reader", preparingGroups: false)
    return Int(try queue.starvedWorkers().map(\.slotsGivenUp).reduce(0, +))
}
