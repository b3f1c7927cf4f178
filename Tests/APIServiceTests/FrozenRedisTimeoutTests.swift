import Foundation
import Synchronization
import Testing
import TestSupport

/// Redis frozen (as by SIGSTOP, behind a proxy so the shared server is untouched): the API's
/// client limit has a short deadline and then rests, so requests with a token go on at once,
/// callers without one get 503 at once, and everything recovers by itself when Redis answers.
@Suite struct FrozenRedisTimeoutTests {
    /// Redis's own deadline here, long enough that a bound a loaded machine meets (a third of it)
    /// still fails whatever waits for Redis's deadline instead of the short one.
    static let redisTimeout = Duration.seconds(30)
    static let bound = redisTimeout / 3

    @Test func withRedisFrozenTheAPIAnswersAtOnceAndRecoversByItself() async throws {
        let proxy = try FreezableProxy.forTestRedis()
        try await APIHarness.with(configureFleet: { fleet in
            fleet.redisURL = proxy.carrying(fleet.redisURL)
            fleet.redisTimeout = Self.redisTimeout
        }) { api in
            #expect(try await api.get("/v1/subscriptions?account_id=x", auth: .none).status == 401)
            proxy.freeze(forAtMost: .seconds(60))
            defer { proxy.thaw() }
            var slowest = Duration.zero
            for _ in 0..<20 {
                let started = ContinuousClock.now
                let read = try await api.get("/v1/subscriptions?account_id=x")
                slowest = max(slowest, started.duration(to: .now))
                #expect(read.status == 200, "a caller with a token passes while the limit cannot be checked")
            }
            // Without the short deadline, each read would wait for Redis's own.
            #expect(slowest < Self.bound, "the slowest authenticated read took \(slowest)")
            let started = ContinuousClock.now
            let anonymous = try await api.get("/v1/subscriptions?account_id=x", auth: .none)
            #expect(anonymous.status == 503 && anonymous.code == "rate_limit_unavailable")
            #expect(started.duration(to: .now) < Self.bound)

            proxy.thaw()
            let recovered = try await eventually(within: .seconds(10), every: .milliseconds(250)) {
                try await api.get("/v1/subscriptions?account_id=x", auth: .none).status == 401
            }
            #expect(recovered, "the limit is checked again once Redis answers")
        }
    }

    /// Registrations arrive while Redis is frozen: each is answered 503 `redis_unavailable` within
    /// the lanes' short deadline (the first) or at once (the rest, during the rest), and reads, which
    /// share the lanes, go on answering as fast as without them.
    @Test func registrationsDuringAFrozenRedisAnswerSoonAndLeaveReadsTheirLanes() async throws {
        let proxy = try FreezableProxy.forTestRedis()
        try await APIHarness.with(configureFleet: { fleet in
            fleet.redisURL = proxy.carrying(fleet.redisURL)
            fleet.redisTimeout = Self.redisTimeout
        }) { api in
            let (_, id) = try await api.registered()
            proxy.freeze(forAtMost: .seconds(60))
            defer { proxy.thaw() }
            let answered = Answered()
            async let registrations = withThrowingTaskGroup(of: (Int, String?, Duration).self) { group in
                for index in 1...6 {
                    group.addTask {
                        let posted = ContinuousClock.now
                        let reply = try await api.post("/v1/receipts", ["receipt": api.receipt(index: index).receiptData])
                        return (reply.status, reply.code, posted.duration(to: .now))
                    }
                }
                let all = try await group.reduce(into: []) { $0.append($1) }
                answered.flag.store(true, ordering: .relaxed)
                return all
            }
            // Reads one after another for as long as registrations are waiting on Redis, and once more after.
            var slowestRead = Duration.zero
            repeat {
                let read = ContinuousClock.now
                #expect(try await api.get("/v1/subscriptions/\(id)").status == 200)
                slowestRead = max(slowestRead, read.duration(to: .now))
            } while !answered.flag.load(ordering: .relaxed)
            let answers = try await registrations
            #expect(answers.allSatisfy { $0.0 == 503 && $0.1 == "redis_unavailable" }, "\(answers)")
            #expect(answers.allSatisfy { $0.2 < Self.bound }, "each registration answered before Redis's deadline: \(answers.map(\.2))")
            // Alone, reads answer within a second (docs/api.md); a read that waited for a lane would
            // wait as long as the registration holding it waits for Redis.
            #expect(slowestRead < Self.bound, "the slowest read took \(slowestRead)")
        }
    }
}

/// Set once every registration was answered (atomics are not copyable, so the test shares one through a class).
private final class Answered: Sendable {
    let flag = Atomic(false)
}
