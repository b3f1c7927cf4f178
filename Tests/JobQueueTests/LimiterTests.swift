import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("The fleet-wide rate limiter")
struct LimiterTests {
    @Test("8 clients booking slots at once for 10 s never get more than the rate (+ burst) in 10 s or in any second, and get all of it")
    func fleetWideRate() async throws {
        let deployment = try Deployment(clock: .driven)
        let limit = try RateLimit(perSecond: 200, burst: 5)
        let (duration, step) = (Duration.seconds(10), Duration.milliseconds(500))
        let slots = try await deployment.cleaningUp {
            var slots: [Duration] = []
            // The clock stands still while the clients book, then moves a step: slots are exact times.
            for round in 0..<Int(duration / step) {
                let now = step * round
                slots += try await withThrowingTaskGroup(of: [Duration].self) { group in
                    for _ in 0..<8 {
                        group.addTask { try await onOwnThread { try Self.book(deployment, limit, upTo: 20, at: now) } }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
                try await deployment.clock.advance(by: step)
            }
            return slots.sorted()
        }

        // Never more slots than the rate allows; and the clients kept the bucket busy, so they got
        // every one (benchmarks/run rate measures the rate at the wire: 100.0% of the limit).
        let expected = Int(limit.perSecond * duration.seconds)
        let within = slots.filter { $0 <= duration }.count
        #expect(within <= expected + limit.burst, "\(within) slots in \(duration)")
        #expect(within >= expected, "\(within) slots in \(duration)")
        // The burst at once (the bucket starts full), then a slot each interval: none booked twice.
        let interval = Duration.seconds(1) / Int(limit.perSecond)
        #expect(Array(slots.prefix(limit.burst)) == Array(repeating: .zero, count: limit.burst))
        #expect(zip(slots.dropFirst(limit.burst - 1), slots.dropFirst(limit.burst)).allSatisfy { $1 - $0 == interval })

        // The slots within one second after a slot.
        var busiest = 0
        for (index, first) in slots.enumerated() {
            busiest = max(busiest, slots[index...].prefix { $0 <= first + .seconds(1) }.count)
        }
        #expect(busiest <= Int(limit.perSecond) + limit.burst, "busiest second: \(busiest)")
        #expect(busiest >= Int(limit.perSecond), "busiest second: \(busiest)")
    }

    /// One client at `now` (from the start) on the driven clock: books up to `count` slots at a time,
    /// at most 3 s ahead, until it is told to wait. Returns its slots' times from the start.
    private static func book(
        _ deployment: Deployment, _ limit: RateLimit, upTo count: Int, at now: Duration
    ) throws -> [Duration] {
        let gate = try deployment.gate(limit: limit)
        var slots: [Duration] = []
        while true {
            switch try gate.admit(upTo: count, within: .seconds(3)) {
            case .granted(let granted): slots += granted.map { now + $0 }
            case .wait: return slots
            case let admission: throw QueueError.invalidArgument("unexpected admission \(admission)")
            }
        }
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
