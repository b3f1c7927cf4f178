import JobQueue
import Lanes

/// Why the fleet does not let a call to Apple go now: the one reading of the gate's answer, which
/// a job turns into a postponement (`settlement`) and the API into a 503 for the person waiting.
public enum Refusal: Sendable, Equatable {
    /// Apple is unavailable and the fleet is paused: ask again after this long.
    case paused(Duration)
    /// The endpoint's budget told the fleet to come back later (HTTP 429).
    case throttled(Duration)
    /// Every slot within the caller's horizon is booked.
    case rateLimited(Duration)
    /// An operator or a configuration error stopped the fleet.
    case halted
    /// A configuration error stopped the caller's app alone.
    case appHalted

    /// How long a halted caller waits before asking again: an operator's `resume` ends a halt.
    public static let haltedWait = Duration.seconds(30)

    /// A job refused now goes back to the queue, without an attempt charged.
    public var settlement: Settlement {
        switch self {
        case .paused(let wait), .throttled(let wait), .rateLimited(let wait): .postpone(wait.withJitter())
        case .halted, .appHalted: .postpone(Self.haltedWait)
        }
    }
}

extension Admission {
    /// Why the call may not go now; nil when it may (`.granted`, or `.probe`: the paused fleet's one call).
    public var refusal: Refusal? {
        switch self {
        case .granted, .probe: nil
        case .wait(let wait): .rateLimited(wait)
        case .paused(let wait): .paused(wait)
        case .throttled(let wait): .throttled(wait)
        case .halted: .halted
        case .appHalted: .appHalted
        }
    }
}
