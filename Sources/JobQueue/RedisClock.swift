import Synchronization

/// Where Redis's clock stands against this process's, learned from replies that came back quickly:
/// so that a reply read late (its thread waiting for a CPU while the reply sat in its socket) is
/// placed where a prompt reading would have placed it, not when it happened to be read.
///
/// The rate limit books time slots on Redis's clock. Counted from when a worker reads the
/// admission's reply, the slots of a worker starved of CPU would be placed late by its wait, and
/// its calls would land on top of the slots booked after them. Placed by the reply's own time, a
/// slot that passed while the reply waited is seen to have passed.
///
/// The reference is the reply with the quickest round trip lately: its Redis time and when it was
/// read. A reply's Redis time, less the reference's, after the reference's reading, is when the
/// reply would have been read had it come back as quickly. A reference ages, so that a clock that
/// steps (NTP, a failover to another host) or a network that got slower is followed within
/// seconds; and a placement never falls outside its own round trip, so a wrong reference can do no
/// worse than the reading itself.
public final class RedisClock: Sendable {
    /// A reply that came back quickly: its Redis time (µs), how long its round trip took, and when
    /// it was read.
    private struct Reference {
        var redisTime: Int64
        var roundTrip: Duration
        var read: ContinuousClock.Instant

        /// Its round trip as it counts against a newer one's: longer by `aging` per second of age.
        func agedRoundTrip(at now: ContinuousClock.Instant) -> Duration {
            roundTrip + RedisClock.aging * (read.duration(to: now) / .seconds(1))
        }
    }

    /// How much an older reference's round trip counts for more, per second of its age. 20 ms a
    /// second: a reply 5 ms slower (a worker's slot tolerance) replaces a reference a quarter of a
    /// second old, so a network that slowed, or a clock that stepped, is followed within seconds,
    /// while a process that is starved now and then still has a prompt reply of its own lately.
    static let aging = Duration.milliseconds(20)

    private let reference = Mutex<Reference?>(nil)

    public init() {}

    /// When a reply stamped `redisTime` (µs of Redis's clock), asked for at `asked` and read at
    /// `read`, would have been read had its round trip been the quickest lately: `read` for such a
    /// reply, earlier for one that was read late; never before `asked`. The reply becomes the
    /// reference if it was the quickest.
    public func promptReading(ofReplyAt redisTime: Int64, asked: ContinuousClock.Instant, read: ContinuousClock.Instant)
        -> ContinuousClock.Instant
    {
        let roundTrip = asked.duration(to: read)
        return reference.withLock { reference in
            guard let known = reference, known.agedRoundTrip(at: read) < roundTrip else {
                reference = Reference(redisTime: redisTime, roundTrip: roundTrip, read: read)
                return read
            }
            let prompt = known.read + .microseconds(redisTime - known.redisTime)
            return min(max(prompt, asked), read)
        }
    }
}
