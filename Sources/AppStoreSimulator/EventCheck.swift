/// One verification that wrote a subscription's state: when Apple answered (its clock, ms), and
/// whether the answer showed the whole transaction history (the Server API reads it when something
/// changed) or, as the fleet asks verifyReceipt, the newest transactions only.
public struct Look: Sendable {
    public var ms: Int64
    public var seesWholeHistory: Bool

    public init(at ms: Int64, seesWholeHistory: Bool = false) {
        self.ms = ms
        self.seesWholeHistory = seesWholeHistory
    }
}

/// Holds the events a fleet announced for one subscription against the simulator's truth.
public struct EventCheck: Sendable {
    /// Events the truth has and the fleet did not announce.
    public var missing: [ExpectedEvent]
    /// Events the fleet announced beyond the truth.
    public var extra: [ExpectedEvent]

    public var passed: Bool { missing.isEmpty && extra.isEmpty }

    /// Compares `announced` with what `subscription` must have produced over `looks`: the
    /// verifications that wrote its state, in the order they were written.
    public init(_ subscription: SimulatedSubscription, looks: [Look], announced: [ExpectedEvent]) {
        var expected = [ExpectedEvent: Int]()
        if let first = looks.first {
            let all = subscription.expectedEventsAtFirstLook(at: first.ms)
                + zip(looks, looks.dropFirst()).flatMap { subscription.expectedEvents(since: $0.ms, at: $1) }
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
