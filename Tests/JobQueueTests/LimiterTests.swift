import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("The fleet-wide rate limiter")
struct LimiterTests {
    /// One booked slot as a client saw it, as offsets from the test's start: the admission was
    /// asked at `sent` and answered at `received`, so on Redis's clock the slot fell between
    /// `sent + delay` and `received + delay`.
    struct Booking: Sendable {
        let sent: Duration
        let received: Duration
        let delay: Duration
        var earliest: Duration { sent + delay }
        var latest: Duration { received + delay }
    }

    @Test("8 clients booking slots for 5 s get the rate within 2%, and never more than rate + burst slots in any second")
    func fleetWideRate() async throws {
        let deployment = try Deployment()
        let limit = try RateLimit(perSecond: 200, burst: 5)
        let duration = Duration.seconds(5)
        let bookings = try await deployment.cleaningUp {
            // Empty the bucket first: slots run from then on, with no banked burst.
            let start = try await onOwnThread {
                let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
                _ = try gate.admit(upTo: limit.burst)
                return ContinuousClock.now
            }
            return try await withThrowingTaskGroup(of: [Booking].self) { group in
                for _ in 0..<8 {
                    group.addTask { try await onOwnThread { try Self.book(deployment, limit, from: start, for: duration) } }
                }
                return try await group.reduce(into: []) { $0 += $1 }.sorted { $0.earliest < $1.earliest }
            }
        }

        // Slots are booked back to back: as many in the 5 s as the rate allows, give or take 2%.
        let expected = limit.perSecond * duration.seconds
        let surelyIn = bookings.filter { $0.latest <= duration }.count
        let perhapsIn = bookings.filter { $0.earliest <= duration }.count
        #expect(Double(surelyIn) >= expected * 0.98, "\(surelyIn) slots in \(duration)")
        #expect(Double(perhapsIn) <= expected * 1.02 + Double(limit.burst), "\(perhapsIn) slots in \(duration)")

        // The slots that surely fell within one second after a slot's earliest time.
        var busiest = 0
        for (index, first) in bookings.enumerated() {
            let end = first.earliest + .seconds(1)
            busiest = max(busiest, bookings[index...].prefix { $0.earliest <= end }.filter { $0.latest <= end }.count)
        }
        #expect(busiest <= Int(limit.perSecond) + limit.burst, "busiest second: \(busiest)")
        #expect(busiest >= Int(limit.perSecond * 0.9), "busiest second: \(busiest)")
    }

    /// One client: books up to 20 slots at a time, at most a second ahead, and sleeps until its
    /// last one, until `duration` has passed since `start`; told to wait, it waits. Eight of them
    /// keep about 0.8 s of slots booked, so a stall of every client shorter than that (a loaded
    /// machine) wastes no slot.
    private static func book(
        _ deployment: Deployment, _ limit: RateLimit, from start: ContinuousClock.Instant, for duration: Duration
    ) throws -> [Booking] {
        let gate = FleetGate(connection: try deployment.connect(), keys: deployment.keys, limit: limit)
        var bookings: [Booking] = []
        while ContinuousClock.now - start < duration {
            let sent = ContinuousClock.now - start
            let admission = try gate.admit(upTo: 20, within: .seconds(1))
            let received = ContinuousClock.now - start
            switch admission {
            case .granted(let slots):
                bookings += slots.map { Booking(sent: sent, received: received, delay: $0) }
                Thread.sleep(forTimeInterval: slots[slots.count - 1].seconds)
            case .wait(let wait): Thread.sleep(forTimeInterval: wait.seconds)
            default: throw QueueError.invalidArgument("unexpected admission \(admission)")
            }
        }
        return bookings
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
