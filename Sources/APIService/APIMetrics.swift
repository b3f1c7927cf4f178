import Metrics

/// The API's counters, through swift-metrics: whichever backend the process bootstraps
/// (Prometheus on /metrics) reports them; tests pass a factory they can read.
///
/// - `receiptfleet_api_rejected_requests_total{reason}`: unauthorized, rate_limited, body_too_large
/// - `receiptfleet_api_notifications_total{version, outcome}`: settled, queued, duplicate, ignored_environment,
///   unknown_subscription, no_subscription, unauthenticated (wrong password or signature), malformed
/// - `receiptfleet_api_registrations_total{outcome}`: registered, pending, rejected, apple_unavailable, redis_unavailable
struct APIMetrics: Sendable {
    let factory: any MetricsFactory

    func rejected(_ reason: String) {
        Counter(label: "receiptfleet_api_rejected_requests_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    func notification(version: Int?, _ outcome: String) {
        Counter(label: "receiptfleet_api_notifications_total",
                dimensions: [("version", version.map { "v\($0)" } ?? "unknown"), ("outcome", outcome)], factory: factory).increment()
    }

    func registration(_ outcome: String) {
        Counter(label: "receiptfleet_api_registrations_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// A refused registration's outcome: why it could not be verified now, or rejected.
    static func registrationOutcome(of error: APIError) -> String {
        switch (error.status, error.code) {
        case (.serviceUnavailable, "redis_unavailable"), (.serviceUnavailable, "database_unavailable"): error.code
        case (.serviceUnavailable, _): "apple_unavailable"
        default: "rejected"
        }
    }
}
