import AppStore
import JobQueue
import Synchronization

/// The time slots this process booked and has not used yet, by endpoint, shared by its workers:
/// an admission books, besides the admitted worker's call, the calls the process's other workers
/// will make within `PacedGate.slotTolerance`, so that Redis sees one admission for a handful of
/// the process's calls rather than one for each (a worker alone makes few calls within 5 ms).
///
/// A slot is good from its time until `slotTolerance` after it: the limit's promise is about when
/// calls reach Apple. One that nobody took in time is given up, one call less for the fleet; how
/// many to book follows what the process took in the last tolerance window, so few go to waste.
final class SlotPool: Sendable {
    private struct Shelf {
        /// Booked and not taken yet, earliest first.
        var slots: [ContinuousClock.Instant] = []
        /// When slots were taken lately: the process's demand over the last tolerance window.
        var taken: [ContinuousClock.Instant] = []

        mutating func forget(before now: ContinuousClock.Instant, tolerance: Duration) {
            slots.removeAll { now > $0 + tolerance }
            taken.removeAll { $0 < now - tolerance }
        }
    }

    private let tolerance: Duration
    private let shelves = Mutex<[AppleEndpoint: Shelf]>([:])
    /// Where Redis's clock stands against the process's, learned from all its workers' admissions:
    /// it places each admission's slots by the reply's own time, however late it was read.
    let redisClock = RedisClock()

    init(tolerance: Duration) {
        self.tolerance = tolerance
    }

    /// The earliest slot for `endpoint` still good `now`, taken; slots too late to use are dropped.
    func take(_ endpoint: AppleEndpoint, at now: ContinuousClock.Instant = .now) -> ContinuousClock.Instant? {
        shelves.withLock { shelves in
            var shelf = shelves[endpoint, default: Shelf()]
            defer { shelves[endpoint] = shelf }
            shelf.forget(before: now, tolerance: tolerance)
            guard !shelf.slots.isEmpty else { return nil }
            shelf.taken.append(now)
            return shelf.slots.removeFirst()
        }
    }

    /// Keeps an admission's slots for the process's workers, but the first: the booking worker's own.
    func keep(_ booked: [ContinuousClock.Instant], for endpoint: AppleEndpoint, at now: ContinuousClock.Instant = .now) {
        shelves.withLock { shelves in
            var shelf = shelves[endpoint, default: Shelf()]
            defer { shelves[endpoint] = shelf }
            shelf.taken.append(now)
            shelf.slots = (shelf.slots + booked.dropFirst()).sorted()
        }
    }

    /// Gives up every slot of `endpoint`: Apple's 429 spent its budget, or a halt stopped it.
    func drop(_ endpoint: AppleEndpoint) {
        shelves.withLock { $0[endpoint]?.slots.removeAll() }
    }

    /// How many slots of `endpoint` the process took within the tolerance window before `now`: what
    /// the next admission books, one more, for its workers' calls.
    func recentDemand(for endpoint: AppleEndpoint, at now: ContinuousClock.Instant = .now) -> Int {
        shelves.withLock { shelves in
            shelves[endpoint, default: Shelf()].forget(before: now, tolerance: tolerance)
            return shelves[endpoint]?.taken.count ?? 0
        }
    }
}
