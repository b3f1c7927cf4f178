import Foundation
import Testing
import TestSupport

/// Redis frozen (as by SIGSTOP, behind a proxy so the shared server is untouched): the API's
/// client limit has a short deadline and then rests, so requests with a token go on at once,
/// callers without one get 503 at once, and everything recovers by itself when Redis answers.
@Suite struct FrozenRedisTimeoutTests {
    @Test func withRedisFrozenTheAPIAnswersAtOnceAndRecoversByItself() async throws {
        let proxy = try FreezableProxy.forTestRedis()
        try await APIHarness.with(configureFleet: { $0.redisURL = proxy.carrying($0.redisURL) }) { api in
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
            // Redis's own deadline is 10 s: without the short one, each read would wait that long.
            #expect(slowest < .seconds(2), "the slowest authenticated read took \(slowest)")
            let started = ContinuousClock.now
            let anonymous = try await api.get("/v1/subscriptions?account_id=x", auth: .none)
            #expect(anonymous.status == 503 && anonymous.code == "rate_limit_unavailable")
            #expect(started.duration(to: .now) < .seconds(2))

            proxy.thaw()
            let recovered = try await eventually(within: .seconds(10), every: .milliseconds(250)) {
                try await api.get("/v1/subscriptions?account_id=x", auth: .none).status == 401
            }
            #expect(recovered, "the limit is checked again once Redis answers")
        }
    }
}
