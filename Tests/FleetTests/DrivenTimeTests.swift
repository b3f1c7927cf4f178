import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Lanes
import Observability
import RedisClient
import TestSupport
import Testing

/// A process's duties wait on the clock its context gives them: on a driven clock, five minutes
/// pass when the test says so, and the test waits on the duties' signals, not on time.
@Suite struct DrivenTimeTests {
    @Test(.timeLimit(.minutes(1)))
    func aWorkersDutiesRunOnTheClockTheyAreGiven() async throws {
        let settings = try FleetSettings.forTest(
            redisURL: TestServers.redisURL, postgresURL: TestServers.postgresURL, keyPrefix: "{\(uniqueName("driven"))}",
            rateLimit: try RateLimit(perSecond: 100, burst: 1), concurrency: 1)
        let (clock, signals) = (DrivenClock(), DutySignals())
        let worker = RunningServices.worker(settings: settings, clock: clock, signals: signals)
        try await worker.whileRunning {
            // The heartbeat, the promoter and the timings' reporter step at once; the lease keeper,
            // the cleanup and the reclaimer after their first interval. Then all six sleep on the clock.
            await signals.waitForSteps(of: "rf-heartbeat", 1)
            await signals.waitForSteps(of: "rf-promoter", 1)
            await signals.waitForSteps(of: "rf-timings", 1)
            await clock.waitForSleepers(6)
            #expect(signals.steps(of: "rf-cleanup") == (0, 0), "no step before its five minutes")
            let queue = try JobQueue(
                connection: try RedisConnection(settings.redisConfiguration()), keys: try QueueKeys(prefix: settings.keyPrefix),
                consumer: "driven-test", preparingGroups: false)
            #expect(try queue.processes().count == 1, "the first heartbeat told the fleet about the process")

            clock.advance(by: .seconds(300))
            await signals.waitForSteps(of: "rf-cleanup", 1)
            await signals.waitForSteps(of: "rf-reclaimer", 1)
            await signals.waitForSteps(of: "rf-heartbeat", 2)
            await signals.waitForSteps(of: "rf-timings", 2)
            #expect(signals.steps(of: "rf-cleanup").failed == 0 && signals.steps(of: "rf-heartbeat").failed == 0)
            #expect(signals.steps(of: "rf-timings").failed == 0)
        }
    }

    /// A worker thread that finds the fleet halted rests on its process's clock too: it is one of
    /// the clock's sleepers, and Apple hears nothing from it meanwhile. (No time limit: the database
    /// and the simulator it needs take their turns with the other suites'; the wait is bounded.)
    @Test func aWorkerRestsOnItsProcesssClockWhileTheFleetIsHalted() async throws {
        let nowMs = FleetEndToEndTests.nowMs
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 3)
                setup.settings.concurrency = 1
                _ = try await setup.load()
                let gate = FleetGate(
                    connection: try RedisConnection(setup.settings.redisConfiguration()),
                    keys: try QueueKeys(prefix: setup.settings.keyPrefix), limit: setup.settings.rateLimit)
                try gate.halt(reason: "maintenance window")
                let (clock, signals) = (DrivenClock(), DutySignals())
                let worker = RunningServices.worker(settings: setup.settings, clock: clock, signals: signals)
                try await worker.whileRunning {
                    // The six periodic duties, and the worker thread resting after its admission said halted.
                    let resting = try await eventually(within: .seconds(20)) { clock.sleepers >= 7 }
                    #expect(resting, "\(clock.sleepers) asleep on the clock")
                    #expect(simulator.store.statistics.requestsTotal == 0)
                }
            }
        }
    }
}
