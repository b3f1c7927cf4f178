/// Holds the events a fleet announced for one subscription against the simulator's truth.
public struct EventCheck: Sendable {
    /// Events the truth has and the fleet did not announce.
    public var missing: [ExpectedEvent]
    /// Events the fleet announced beyond the truth.
    public var extra: [ExpectedEvent]

    public var passed: Bool { missing.isEmpty && extra.isEmpty }

    /// Compares `announced` with what `subscription` must have produced over `looks`: the moments
    /// (Apple's clock, ms) of the verifications that wrote its state, in the order they were written.
    public init(_ subscription: SimulatedSubscription, looks: [Int64], announced: [ExpectedEvent]) {
        var expected = [ExpectedEvent: Int]()
        if let first = looks.first {
            let all = subscription.expectedEventsAtFirstLook(at: first)
                + zip(looks, looks.dropFirst()).flatMap { subscription.expectedEvents(since: $0, at: $1) }
            for event in all { expected[event, default: 0] += 1 }
        }
        var extra: [ExpectedEvent] = []
        for event in announced {
            if let count = expected[event], count > 0 { expected[event] = count - 1 } else { extra.append(event) }
        }
        missing = expected.flatMap { event, count in Array(repeating: event, count: count) }.sorted()
        self.extra = extra.sorted()
    }
}
