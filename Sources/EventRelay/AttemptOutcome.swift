import Foundation
import HTTPClient

/// What one delivery attempt came to, as recorded in `webhook_attempts`.
struct AttemptOutcome {
    /// The receiver's HTTP status; nil when no answer came.
    let status: Int?
    /// Why the attempt did not count as delivered; nil when it did. Never holds the secret: it is
    /// made of the status, or of `HTTPError`, which names only the host.
    let error: String?
    let latency: Duration
    /// The wait the receiver asked for with `Retry-After`.
    let retryAfter: Duration?

    /// A request that got no answer, or could not be made.
    init(failure: String, latency: Duration) {
        status = nil
        error = failure
        self.latency = latency
        retryAfter = nil
    }

    /// An answer: only 2xx is delivered. Redirects are failures, since following one would send
    /// the event somewhere the operator never configured.
    init(_ response: HTTPResponse, latency: Duration, now: Date) {
        status = response.status
        self.latency = latency
        retryAfter = response.headers["Retry-After"].flatMap { RetryAfter.delay($0, now: now) }
        error = switch response.status {
        case 200...299: nil
        case 410: "the receiver answered 410 Gone; the endpoint is disabled"
        case 300...399: "the receiver answered \(response.status), a redirect, which is not followed; "
            + "configure the final URL"
        default: "the receiver answered \(response.status); only 2xx counts as delivered"
        }
    }

    var isDelivered: Bool { error == nil }
    var isGone: Bool { status == 410 }

    /// How long to wait before the next attempt, after `attempts` attempts in all; nil when there
    /// is none: delivered, gone, or the schedule used up. A later `Retry-After` wins, up to the
    /// schedule's longest delay (a receiver cannot park a delivery forever).
    func retryDelay(after attempts: Int, schedule: [Duration]) -> Duration? {
        guard !isDelivered, !isGone, schedule.indices.contains(attempts - 1) else { return nil }
        let scheduled = schedule[attempts - 1]
        guard let retryAfter, let longest = schedule.max() else { return scheduled }
        return max(scheduled, min(retryAfter, longest))
    }
}

/// What became of one delivery attempt, as `WebhookDispatcher` reports it for metrics.
public enum DeliveryAttemptResult: String, Sendable, CaseIterable {
    /// The receiver answered 2xx.
    case delivered
    /// It failed; another attempt is scheduled.
    case retry
    /// It failed and the retry schedule is used up: the delivery is failed for good.
    case failed
    /// The receiver answered 410 Gone: the endpoint is disabled.
    case disabled
}
