/// How often and how long after a failure a job is tried again.
///
/// Delays use "full jitter" exponential backoff: a uniform random time between zero and
/// min(cap, base·2^attempt). The randomness spreads the retries of jobs that failed together
/// (say, during an outage) instead of sending them back in one wave.
public struct RetryPolicy: Sendable, Hashable {
    public let base: Duration
    public let cap: Duration
    /// How many times a job runs at most, counting the first run; then it goes to the dead letters.
    public let maxAttempts: Int

    /// 8 attempts, delays from up to 30 s after the first failure to up to 6 hours.
    public static let standard = RetryPolicy(checkedBase: .seconds(30), cap: .seconds(6 * 3600), maxAttempts: 8)

    public init(base: Duration, cap: Duration, maxAttempts: Int) throws(QueueError) {
        guard base >= .milliseconds(1), cap >= base else {
            throw .invalidArgument("the retry base must be at least 1 ms and the cap at least the base")
        }
        guard maxAttempts >= 1 else { throw .invalidArgument("maxAttempts must be at least 1") }
        self.init(checkedBase: base, cap: cap, maxAttempts: maxAttempts)
    }

    private init(checkedBase base: Duration, cap: Duration, maxAttempts: Int) {
        self.base = base
        self.cap = cap
        self.maxAttempts = maxAttempts
    }

    /// The longest delay after the failure of attempt `attempt` (0 for a job's first run):
    /// min(cap, base·2^attempt), whole milliseconds.
    public func ceiling(attempt: Int) -> Duration {
        let base = base.wholeMilliseconds, cap = cap.wholeMilliseconds
        // Past 2^40 every realistic base exceeds any realistic cap; stopping there avoids overflow.
        let (scaled, overflow) = base.multipliedReportingOverflow(by: 1 << min(max(attempt, 0), 40))
        return .milliseconds(overflow ? cap : min(cap, scaled))
    }

    /// A random delay in 0...ceiling(attempt), whole milliseconds.
    public func backoff(attempt: Int) -> Duration {
        .milliseconds(Int64.random(in: 0...ceiling(attempt: attempt).wholeMilliseconds))
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole microseconds, rounded down.
    var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
