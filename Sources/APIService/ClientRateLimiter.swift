import Synchronization

/// Requests per client, in this process: a generic cell rate algorithm per client, like the
/// fleet's limiter on Redis but in memory. For Apple's notification budget, which must hold when
/// Redis is down; API clients are limited fleet-wide (`FleetClientLimiter`).
final class ClientRateLimiter: Sendable {
    private let interval: Duration
    private let burst: Int
    /// Client → theoretical arrival time.
    private let arrivals = Mutex<[String: ContinuousClock.Instant]>([:])

    init(perSecond: Double, burst: Int) {
        interval = .nanoseconds(Int64(1_000_000_000 / perSecond))
        self.burst = burst
    }

    /// Admits one request of `client`, or says how long to wait.
    func admit(_ client: String, now: ContinuousClock.Instant = .now) -> Duration? {
        arrivals.withLock { arrivals in
            let horizon = now + interval * burst
            let arrival = max(arrivals[client] ?? now, now)
            guard arrival + interval <= horizon else { return arrival + interval - horizon }
            arrivals[client] = arrival + interval
            // Forget idle clients now and then, so addresses that came once do not pile up.
            if arrivals.count > 10_000 { arrivals = arrivals.filter { $0.value > now } }
            return nil
        }
    }
}
