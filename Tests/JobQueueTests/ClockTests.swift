import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("The scripts' clock")
struct ClockTests {
    @Test("a driven clock starts at Redis's time and moves only when the test moves it; handles on Redis's clock ignore it")
    func drivenClock() async throws {
        let (before, driven, onRedis, after) = try await withDeployment(clock: .driven) { deployment, connection in
            let before = try connection.redisNow()
            let queue = try deployment.queue("driven", on: connection)
            let enqueuedAt = { (id: Int64) in
                try unwrap(try queue.enqueue(subscriptionID: id, run: "r", reason: .notification), "a job").enqueuedAt
            }
            var driven = [try enqueuedAt(1)]
            try deployment.clock.advance(by: .seconds(30), on: connection)
            driven.append(try enqueuedAt(2))
            let redis = try JobQueue(connection: connection, keys: deployment.keys, consumer: "redis")
            let onRedis = try unwrap(try redis.enqueue(subscriptionID: 3, run: "r", reason: .notification), "a job").enqueuedAt
            return (before, driven, onRedis, try connection.redisNow())
        }
        #expect(driven[0] >= before && driven[0] <= after)
        #expect(driven[1] == driven[0] + 30_000)
        #expect(onRedis >= before && onRedis <= after)
    }

    @Test("on the driven clock a script sees its own KEYS: an optional key, given or not, is told apart")
    func drivenScriptsKeepTheirKeys() async throws {
        let (plain, once, again) = try await withDeployment(clock: .driven) { deployment, connection in
            let queue = try deployment.queue("a", on: connection)
            let plain = try queue.enqueue(subscriptionID: 1, run: "r", reason: .notification)
            let once = try queue.enqueue(subscriptionID: 2, run: "r", reason: .notification, once: "n-1")
            return (plain, once, try queue.enqueue(subscriptionID: 2, run: "r", reason: .notification, once: "n-1"))
        }
        #expect(plain?.subscriptionID == 1)
        #expect(once?.subscriptionID == 2)
        #expect(again == nil, "the once-key is KEYS[2], not the clock's key")
    }
}
