import Fleet
import Foundation
import JobQueue
import Operations
import RedisClient
import TestSupport
import Testing

/// Drills and benchmarks stand a whole deployment on a later day by moving one shift in Redis
/// (`shifted-clock`): the scheduler process finds what is due then, the worker process verifies it
/// as of then and plans its next checks from then, and the states match Apple's truth at that moment.
@Suite struct ShiftedClockTests {
    static let days: Int64 = 40

    @Test func oneShiftInRedisMovesEveryProcessToALaterDay() async throws {
        let nowMs = Int64(Date().timeIntervalSince1970) * 1000
        try await TestDatabase.with { database in
            try await LiveSimulator.with(startMs: nowMs) { simulator in
                var setup = try FleetSetup(database: database, simulator: simulator, nowMs: nowMs, receipts: 40)
                setup.settings.scriptClock = .shifted
                _ = try await setup.load()
                #expect(try await setup.work().isSettled, "the first look, with no shift")

                // Forty days on, for Apple and for every process of the deployment.
                let settings = setup.settings
                try await onOwnThread {
                    let redis = try RedisConnection(RedisConfiguration(url: settings.redisURL))
                    _ = try redis.command("SET", try QueueKeys(prefix: settings.keyPrefix).timeShift, Self.days * 86_400_000_000)
                }
                simulator.store.clock.set(nowMs: nowMs + Self.days * 86_400_000)
                let later = nowMs / 1000 + Self.days * 86_400
                let dueThen = try await setup.count("SELECT count(*) AS n FROM subscriptions WHERE next_check_at <= to_timestamp(\(later))")
                #expect(dueThen > 0)

                let scheduled = try await runFleetCommand(["schedule"], environment: setup.environment)
                #expect(scheduled.status == 0, "\(scheduled.output)")
                let worker = try FleetProcess(["worker"], environment: setup.environment)
                #expect(try await setup.status(within: .seconds(60)) { $0.isSettled }.isSettled)
                worker.send(SIGTERM)
                #expect(try await worker.exitStatus(within: .seconds(30)) == 0)

                // Every check due by then was made as of then, and its next one planned after then.
                let lookedThen = try await setup.count(
                    "SELECT count(*) AS n FROM subscriptions WHERE last_verified_at >= to_timestamp(\(later - 3_600))")
                #expect(lookedThen == dueThen, "\(lookedThen) of \(dueThen) due were checked as of \(Self.days) days on")
                #expect(try await setup.count("SELECT count(*) AS n FROM subscriptions WHERE next_check_at <= to_timestamp(\(later))") == 0)
                let mismatches = try await setup.groundTruthMismatches()
                #expect(mismatches.isEmpty, "\(mismatches.count) differ: \(mismatches.prefix(10))")

                // `status` reads the deployment's clock too: half a minute after the run's last check its
                // last minute holds checks; a day later on that clock, none.
                let verifiedLastMinute = { (shiftMicroseconds: Int64) in
                    try await onOwnThread {
                        let redis = try RedisConnection(RedisConfiguration(url: settings.redisURL))
                        _ = try redis.command("SET", try QueueKeys(prefix: settings.keyPrefix).timeShift, shiftMicroseconds)
                        return try FleetStatus.read(settings: settings).verifiedLastMinute
                    }
                }
                let lastCheck = try await setup.query("SELECT extract(epoch FROM max(attempted_at))::float8 AS t FROM verifications") {
                    try $0["t"].double() ?? 0
                }[0]
                let justAfter = Int64((lastCheck + 30 - Date().timeIntervalSince1970) * 1_000_000)
                #expect(try await verifiedLastMinute(justAfter) > 0)
                #expect(try await verifiedLastMinute(justAfter + 86_400_000_000) == 0, "a day later nothing was verified in the last minute")
            }
        }
    }
}
