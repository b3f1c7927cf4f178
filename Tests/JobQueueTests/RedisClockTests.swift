import Foundation
import JobQueue
import RedisClient
import TestSupport
import Testing

@Suite("Redis's clock, read from replies that came back quickly")
struct RedisClockTests {
    let start = ContinuousClock.now

    /// `ms` milliseconds after the test's start.
    func at(_ ms: Int) -> ContinuousClock.Instant { start + .milliseconds(ms) }

    @Test("the first reply is the reference; a later one read late is placed where a prompt reading would have been")
    func aLateReadingIsPlacedPromptly() {
        let clock = RedisClock()
        // Redis stamped the first reply at 5,000,000 µs; it came back in 1 ms and was read at 10 ms.
        #expect(clock.promptReading(ofReplyAt: 5_000_000, asked: at(9), read: at(10)) == at(10))
        // Stamped 1 s later by Redis's clock, but read 60 ms after a prompt reading: asked at 1,009 ms.
        #expect(clock.promptReading(ofReplyAt: 6_000_000, asked: at(1_009), read: at(1_070)) == at(1_010))
        // A request slowed on its way there: Redis stamped it late, so it was read promptly.
        #expect(clock.promptReading(ofReplyAt: 6_500_000, asked: at(1_450), read: at(1_510)) == at(1_510))
    }

    @Test("a placement never leaves its own round trip, whatever the reference says (a clock that stepped)")
    func aPlacementStaysWithinItsRoundTrip() {
        let clock = RedisClock()
        _ = clock.promptReading(ofReplyAt: 5_000_000, asked: at(9), read: at(10))
        // Redis's clock stepped back 10 s: the stamp says long before the request was even sent.
        #expect(clock.promptReading(ofReplyAt: -4_000_000, asked: at(100), read: at(120)) == at(100))
        // And forward 10 s: it says long after the reply was read.
        #expect(clock.promptReading(ofReplyAt: 15_200_000, asked: at(200), read: at(220)) == at(220))
    }

    @Test("the reference ages: a slower reply replaces an old one, so a network that slowed is followed")
    func theReferenceAges() {
        let clock = RedisClock()
        _ = clock.promptReading(ofReplyAt: 5_000_000, asked: at(9), read: at(10))
        // 100 ms later, a reply 4 ms slower than the reference, read 5 ms late by it: not yet the reference.
        #expect(clock.promptReading(ofReplyAt: 5_095_000, asked: at(105), read: at(110)) == at(105))
        // A second on, the reference counts for 20 ms more than its 1 ms: a reply of 5 ms is the new one.
        #expect(clock.promptReading(ofReplyAt: 6_095_000, asked: at(1_105), read: at(1_110)) == at(1_110))
        #expect(clock.promptReading(ofReplyAt: 6_195_000, asked: at(1_205), read: at(1_215)) == at(1_210))
    }

    @Test("through the gate: an admission whose reply was read 100 ms late gets its slots 100 ms earlier, a slowed request does not")
    func theGatePlacesSlotsByTheReplysTime() async throws {
        let deployment = try Deployment()
        let proxy = try FreezableProxy.forTestRedis()
        defer { proxy.stop() }
        let limit = try RateLimit(perSecond: 1000, burst: 1000)
        let (prompt, heldBack, slowedThere, unplaced) = try await deployment.cleaningUp {
            try await onOwnThread {
                var configuration = deployment.configuration
                configuration.endpoint = .tcp(host: "127.0.0.1", port: proxy.port)
                let gate = FleetGate(connection: try RedisConnection(configuration), keys: deployment.keys, limit: limit)
                let redisClock = RedisClock()
                func firstSlot(placed: Bool = true) throws -> Duration {
                    guard case .granted(let slots) = try gate.admit(placingSlotsBy: placed ? redisClock : nil) else {
                        throw GateRefused()
                    }
                    return slots[0]
                }
                let prompt = try (0..<20).map { _ in try firstSlot() }
                proxy.holdReplies(for: .milliseconds(100))
                let heldBack = try firstSlot()
                let unplaced = try firstSlot(placed: false)
                proxy.holdReplies(for: .zero)
                // A second on its way there: ten times the held reply's delay, so that a reader a loaded
                // machine wakes late (a few hundred ms) is still told from a request stamped late.
                proxy.freeze(forAtMost: .seconds(1))
                let slowedThere = try firstSlot()
                return (prompt, heldBack, slowedThere, unplaced)
            }
        }
        #expect(prompt.filter { $0 > .milliseconds(-5) }.count >= 10, "replies read promptly are placed as read: \(prompt)")
        #expect(heldBack <= .milliseconds(-95) && heldBack > .milliseconds(-700), "\(heldBack)")  // less a late reader's wake-up
        #expect(unplaced == .zero, "without a RedisClock, slots count from the reading")
        // Placed as read (not a second earlier), less the time a loaded machine took to wake the reader.
        #expect(slowedThere > .milliseconds(-500), "a request held on its way there was stamped late: \(slowedThere)")
    }
}

private struct GateRefused: Error {}
