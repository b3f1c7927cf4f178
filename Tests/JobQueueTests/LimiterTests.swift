import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("The fleet-wide rate limiter")
struct LimiterTests {
    /// One grant as a client saw it: sent and answered, as offsets from the test's start.
    struct Grant: Sendable {
        let sent: Duration
        let received: Duration
        let tokens: Int
    }

    @Test("8 clients hammering it for 5 s get the rate within 2%, and never more than rate + burst in any second")
    func fleetWideRate() async throws {
        let deployment = try Deployment()
        // A burst worth half a second lets the test tolerate a loaded machine's scheduling stalls
        // (a stall of every client at once longer than that would waste tokens).
        let limit = try RateLimit(perSecond: 200, burst: 100)
        let duration = Duration.seconds(5)
        let (drained, grants) = try await deployment.cleaningUp {
            // Empty the bucket first: tokens accrue from then on, with no banked burst.
            let (drained, start) = try await onOwnThread {
                let limiter = RateLimiter(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
                return (try limiter.acquire(upTo: 100), ContinuousClock.now)
            }
            let grants = try await withThrowingTaskGroup(of: [Grant].self) { group in
                for _ in 0..<8 {
                    group.addTask { try await onOwnThread { try Self.hammer(deployment, limit, from: start, for: duration) } }
                }
                return try await group.reduce(into: []) { $0 += $1 }.sorted { $0.sent < $1.sent }
            }
            return (drained, grants)
        }
        #expect(drained.granted == 100)

        // Tokens accrue from the start (the bucket was empty then) until the last grant; times are
        // offsets from the start.
        let total = grants.map(\.tokens).reduce(0, +)
        let span = try #require(grants.last).received
        let expected = limit.perSecond * span.seconds
        #expect(abs(Double(total) - expected) <= expected * 0.02, "granted \(total) in \(span)")

        // A grant happened (on Redis's clock) between its request and its answer, so the grants
        // requested and answered within a window surely fell into it.
        var busiest = 0
        for (index, first) in grants.enumerated() {
            let end = first.sent + .seconds(1)
            let inWindow = grants[index...].prefix { $0.sent <= end }.filter { $0.received <= end }
            busiest = max(busiest, inWindow.map(\.tokens).reduce(0, +))
        }
        #expect(busiest <= Int(limit.perSecond) + limit.burst, "busiest second: \(busiest)")
        #expect(busiest >= Int(limit.perSecond * 0.9), "busiest second: \(busiest)")
    }

    /// One client: takes up to 3 tokens at a time until `duration` has passed since `start`,
    /// sleeping as told (plus jitter) when it gets none.
    private static func hammer(
        _ deployment: Deployment, _ limit: RateLimit, from start: ContinuousClock.Instant, for duration: Duration
    ) throws -> [Grant] {
        let limiter = RateLimiter(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
        var grants: [Grant] = []
        while ContinuousClock.now - start < duration {
            let sent = ContinuousClock.now - start
            let grant = try limiter.acquire(upTo: 3)
            let received = ContinuousClock.now - start
            if grant.granted > 0 {
                grants.append(Grant(sent: sent, received: received, tokens: grant.granted))
            } else {
                Thread.sleep(forTimeInterval: grant.retryAfter.seconds + Double.random(in: 0...0.0005))
            }
        }
        return grants
    }

    @Test("after a quiet spell a client takes the burst at once, then waits one interval per token")
    func burstThenInterval() async throws {
        let (first, empty, later) = try await withDeployment { deployment, connection in
            let limit = try RateLimit(perSecond: 1, burst: 10)  // a token a second
            let limiter = RateLimiter(connection: connection, keys: deployment.keys, limit: limit)
            let first = try limiter.acquire(upTo: 50)
            let empty = try limiter.acquire(upTo: 1)
            Thread.sleep(forTimeInterval: empty.retryAfter.seconds + 0.01)
            return (first, empty, try limiter.acquire(upTo: 5))
        }
        #expect(first.granted == 10)
        #expect(empty.granted == 0)
        #expect(empty.retryAfter > .milliseconds(500) && empty.retryAfter <= .seconds(1))
        #expect(later.granted == 1)
    }

    @Test("unusable rates are refused")
    func invalidRates() {
        for (rate, burst) in [(0.0, 1), (-1, 1), (.infinity, 1), (2_000_000, 1), (10, 0)] {
            #expect(throws: QueueError.self, "\(rate)/\(burst)") { try RateLimit(perSecond: rate, burst: burst) }
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
