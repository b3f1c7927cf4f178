import Fleet
import Metrics
import Prometheus

/// The metrics of one process: a Prometheus registry, and the fleet's instruments on it. Make one
/// per process, give `fleet` to the worker pool, relay runner and scheduler, and the whole to
/// `MetricsServer.start`.
///
/// Nothing is global: tests run many of these side by side in one process, each with its own counts.
public final class ProcessMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// What every instrument of this process is made with (histogram buckets included).
    public let factory: PrometheusMetricsFactory
    /// The counters and histograms that the fleet's components record into.
    public let fleet: FleetMetrics

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        let appleBuckets = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30].map { Duration.seconds($0) }
        factory.durationHistogramBuckets = [
            // Apple answers in 0.1–2 s; the timeout is 30 s.
            MetricName.verifyReceiptDuration: appleBuckets,
            MetricName.appleCallDuration: appleBuckets,
            // One batch's transaction: milliseconds when healthy.
            MetricName.persistDuration: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5].map { Duration.seconds($0) },
        ]
        self.factory = factory
        fleet = FleetMetrics(factory: factory)
    }
}
