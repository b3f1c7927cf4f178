import AppStore
import BuildInfo
import EventRelay
import JobQueue
import Metrics
import Synchronization
import VerificationUseCase

/// A fleet process's own counters and histograms (docs/metrics.md), made through swift-metrics on
/// the factory given: the process's Prometheus registry in `receiptfleet`, one of their own in
/// tests. Recorded where the work happens: the processors, the relay runner, the scheduler. The
/// fleet-wide gauges are `FleetGauges`. It also holds the timings the process has not told the
/// fleet yet (Apple's calls per endpoint, a job's time from first enqueue to done), which its
/// `TimingsReporter` adds to the fleet's in Redis every few seconds for the console's Timings page.
///
/// Every series with a fixed set of label values exists from the start (at 0), so a dashboard or
/// an alert finds it before the first event.
public final class FleetMetrics: VerificationMetrics {
    private let factory: any MetricsFactory
    private let jobsProcessed: [JobOutcome: Counter]
    private let appleResponses: Mutex<[AppleResponse: Counter]>
    private let verifyReceiptDuration: [AppStoreEnvironment: Timer]
    private let appleCallDuration: [AppleEndpoint: Timer]
    /// Timings since the reporter last took them (`takeTimings`), by series (`FleetTimings`).
    private let untoldTimings = Mutex<[String: TimingHistogram]>([:])
    private let limiterWaits: Counter
    private let limiterWaitSeconds: FloatingPointCounter
    private let pauseProbes: Counter
    private let slotsGivenUp: Counter
    /// Slots given up since the heartbeat last told the fleet (`takeSlotsGivenUp`).
    private let slotsGivenUpUntold = Atomic(0)
    /// Jobs this process settled for good (neither retried nor postponed), for the console's workers.
    private let jobsDoneTotal = Atomic(0)
    private let persistDuration: Timer
    private let eventsPublished: Counter
    private let webhookDeliveries: [DeliveryAttemptResult: Counter]
    private let schedulerJobsEnqueued: Counter
    private let consumptionRequests: [ConsumptionOutcome: Counter]
    private let appleDoorCalls: [AppleEndpoint: [AppleDoorOutcome: Counter]]

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: name, dimensions: dimensions, factory: factory)
        }
        jobsProcessed = Dictionary(uniqueKeysWithValues: JobOutcome.allCases.map {
            ($0, counter(MetricName.jobsProcessed, [("outcome", $0.rawValue)]))
        })
        verifyReceiptDuration = Dictionary(uniqueKeysWithValues: AppStoreEnvironment.allCases.map {
            ($0, Timer(label: MetricName.verifyReceiptDuration, dimensions: [("environment", $0.label)], factory: factory))
        })
        appleCallDuration = Dictionary(uniqueKeysWithValues: AppleEndpoint.allCases.map {
            ($0, Timer(label: MetricName.appleCallDuration, dimensions: [("endpoint", $0.rawValue)], factory: factory))
        })
        limiterWaits = counter(MetricName.rateLimiterWaits)
        limiterWaitSeconds = FloatingPointCounter(label: MetricName.rateLimiterWaitSeconds, factory: factory)
        pauseProbes = counter(MetricName.pauseProbes)
        slotsGivenUp = counter(MetricName.rateLimiterSlotsGivenUp)
        persistDuration = Timer(label: MetricName.persistDuration, factory: factory)
        eventsPublished = counter(MetricName.eventsPublished, [("sink", "stream")])
        webhookDeliveries = Dictionary(uniqueKeysWithValues: DeliveryAttemptResult.allCases.map {
            ($0, counter(MetricName.webhookDeliveries, [("outcome", $0.rawValue)]))
        })
        schedulerJobsEnqueued = counter(MetricName.schedulerJobsEnqueued)
        consumptionRequests = Dictionary(uniqueKeysWithValues: ConsumptionOutcome.allCases.map {
            ($0, counter(MetricName.consumptionRequests, [("outcome", $0.rawValue)]))
        })
        appleDoorCalls = Dictionary(uniqueKeysWithValues: AppleEndpoint.allCases.map { endpoint in
            (endpoint, Dictionary(uniqueKeysWithValues: AppleDoorOutcome.allCases.map {
                ($0, counter(MetricName.appleDoorCalls, [("endpoint", endpoint.rawValue), ("outcome", $0.rawValue)]))
            }))
        })
        // Answers of every status appear as they come; these two are there from the start.
        appleResponses = Mutex(Dictionary(uniqueKeysWithValues: AppStoreEnvironment.allCases.map {
            let response = AppleResponse(status: "0", environment: $0.label)
            return (response, counter(MetricName.appleResponses, response.dimensions))
        }))
        Gauge(label: MetricName.buildInfo, dimensions: [("version", BuildInfo.version), ("commit", BuildInfo.commit), ("swift", BuildInfo.swift)],
              factory: factory).record(1)
    }

    func settled(_ outcome: JobOutcome, count: Int = 1) {
        jobsProcessed[outcome]!.increment(by: Int64(count))
        if outcome != .retried && outcome != .postponed { jobsDoneTotal.add(count, ordering: .relaxed) }
    }

    /// A job acked: `outcome`, `age` after its first enqueue.
    func finished(_ outcome: JobOutcome, after age: Duration) {
        settled(outcome)
        timed(FleetTimings.jobs, age)
    }

    /// Jobs this process settled for good since it started.
    var jobsDone: Int { jobsDoneTotal.load(ordering: .relaxed) }

    /// One exchange of a verification: its answer and how long it took.
    public func answered(_ exchange: VerificationExchange) {
        let response = AppleResponse(status: exchange.outcome.statusLabel, environment: exchange.environment.label)
        let counter = appleResponses.withLock { counters in
            if let counter = counters[response] { return counter }
            let counter = Counter(label: MetricName.appleResponses, dimensions: response.dimensions, factory: factory)
            counters[response] = counter
            return counter
        }
        counter.increment()
        guard exchange.wasSent else { return }
        if exchange.endpoint == .verifyReceipt { verifyReceiptDuration[exchange.environment]!.record(duration: exchange.latency) }
        calledApple(exchange.endpoint, taking: exchange.latency)
    }

    /// A call that went to Apple's `endpoint` (answered or not), and how long it took.
    func calledApple(_ endpoint: AppleEndpoint, taking duration: Duration) {
        appleCallDuration[endpoint]!.record(duration: duration)
        timed(endpoint.rawValue, duration)
    }

    private func timed(_ series: String, _ duration: Duration) {
        untoldTimings.withLock { $0[series, default: TimingHistogram()].record(duration) }
    }

    /// The timings since the last call, by series, for the reporter to add to the fleet's.
    func takeTimings() -> [String: TimingHistogram] {
        untoldTimings.withLock { untold in
            let taken = untold
            untold = [:]
            return taken
        }
    }

    /// Puts back timings the reporter took but could not add (Redis failed): the next report adds them.
    func putBackTimings(_ timings: [String: TimingHistogram]) {
        untoldTimings.withLock { untold in untold.merge(timings) { $0.merged($1) } }
    }

    func waitedForToken(_ duration: Duration) {
        limiterWaits.increment()
        limiterWaitSeconds.increment(by: duration.seconds)
    }

    func probed() { pauseProbes.increment() }

    /// A worker thread was too late for its slot (it read the admission, woke, or was about to
    /// send after it had passed) and gave it up (`PacedGate`): many mean the process is starved of CPU.
    func gaveUpSlot() {
        slotsGivenUp.increment()
        slotsGivenUpUntold.add(1, ordering: .relaxed)
    }

    /// The slots given up since the last call, for the heartbeat to tell the fleet.
    func takeSlotsGivenUp() -> Int { slotsGivenUpUntold.exchange(0, ordering: .relaxed) }

    /// Puts back slots the heartbeat took but could not tell (Redis failed): the next one tells them.
    func putBackSlotsGivenUp(_ slots: Int) { slotsGivenUpUntold.add(slots, ordering: .relaxed) }

    public func persisted(in duration: Duration) { persistDuration.record(duration: duration) }

    func published(_ events: Int) { eventsPublished.increment(by: Int64(events)) }

    func attempted(_ delivery: DeliveryAttemptResult) { webhookDeliveries[delivery]!.increment() }

    func enqueued(_ jobs: Int) { schedulerJobsEnqueued.increment(by: Int64(jobs)) }

    /// A call through the `AppleDoor`: sent, or why not.
    func calledApple(_ endpoint: AppleEndpoint, _ outcome: AppleDoorOutcome) { appleDoorCalls[endpoint]?[outcome]?.increment() }

    public func consumptionRequests(_ outcome: ConsumptionOutcome, count: Int = 1) {
        if count > 0 { consumptionRequests[outcome]!.increment(by: Int64(count)) }
    }
}

/// The names of the fleet's metrics: the contract with the dashboards and alert rules (docs/metrics.md).
public enum MetricName {
    public static let jobs = "receiptfleet_jobs"
    public static let oldestJobAge = "receiptfleet_oldest_job_age_seconds"
    public static let liveWorkers = "receiptfleet_live_workers"
    public static let silentWorkers = "receiptfleet_silent_workers"
    public static let fleetPaused = "receiptfleet_fleet_paused"
    public static let fleetHalted = "receiptfleet_fleet_halted"
    public static let serverAPIHalted = "receiptfleet_server_api_halted"
    public static let appHalted = "receiptfleet_app_halted"
    public static let appVerifiedLastMinute = "receiptfleet_app_verified_last_minute"
    public static let appNotificationFirst = "receiptfleet_app_notification_first"
    public static let appFreshness = "receiptfleet_app_freshness_p99_seconds"
    public static let appChecksPerSubscription = "receiptfleet_app_checks_per_subscription"
    public static let rateLimit = "receiptfleet_rate_limit_per_second"
    public static let rateLimiterTokensGranted = "receiptfleet_rate_limiter_tokens_granted_total"
    public static let outboxUnpublished = "receiptfleet_outbox_unpublished_events"
    public static let outboxLag = "receiptfleet_outbox_lag_seconds"
    public static let schedulerLastSuccess = "receiptfleet_scheduler_last_success_timestamp_seconds"

    public static let jobsProcessed = "receiptfleet_jobs_processed_total"
    public static let verifyReceiptDuration = "receiptfleet_verify_receipt_duration_seconds"
    public static let appleCallDuration = "receiptfleet_apple_call_duration_seconds"
    public static let appleResponses = "receiptfleet_apple_responses_total"
    public static let rateLimiterWaits = "receiptfleet_rate_limiter_waits_total"
    public static let rateLimiterWaitSeconds = "receiptfleet_rate_limiter_wait_seconds_total"
    public static let rateLimiterSlotsGivenUp = "receiptfleet_rate_limiter_slots_given_up_total"
    public static let pauseProbes = "receiptfleet_pause_probes_total"
    public static let persistDuration = "receiptfleet_persist_duration_seconds"
    public static let eventsPublished = "receiptfleet_events_published_total"
    public static let webhookDeliveries = "receiptfleet_webhook_deliveries_total"
    public static let schedulerJobsEnqueued = "receiptfleet_scheduler_jobs_enqueued_total"
    public static let consumptionRequests = "receiptfleet_consumption_requests_total"
    public static let appleDoorCalls = "receiptfleet_apple_door_calls_total"
    public static let consumptionRequestsNearingDeadline = "receiptfleet_consumption_requests_nearing_deadline"
    public static let buildInfo = "receiptfleet_build_info"
}

/// What became of a call at the `AppleDoor`: the `outcome` label of `receiptfleet_apple_door_calls_total`.
enum AppleDoorOutcome: String, CaseIterable {
    /// It went to Apple (whatever Apple answered, but 429).
    case sent
    /// Apple answered 429: the endpoint's budget waits for its Retry-After.
    case throttled
    /// Not sent: a pause or a halt covered the endpoint.
    case refused
    /// Not sent: the endpoint's budget was taken for longer than the caller would wait.
    case gaveUp = "gave_up"
}

/// The labels of one `receiptfleet_apple_responses_total` series.
private struct AppleResponse: Hashable {
    let status: String
    let environment: String

    var dimensions: [(String, String)] { [("status", status), ("environment", environment)] }
}

extension AppStoreEnvironment {
    /// "production" or "sandbox": the `environment` label.
    var label: String { rawValue.lowercased() }
}

extension VerificationOutcome {
    /// The `status` label: Apple's status as text (documented codes only, so the label stays
    /// bounded), or what kept Apple's answer from us.
    var statusLabel: String {
        switch self {
        case .status(let status, _): status == 0 || (21_000...21_199).contains(status) ? String(status) : "other"
        case .unreadableBody(let httpStatus): (200...299).contains(httpStatus) ? "unreadable" : "http_error"
        case .transportFailure(.timeout): "timeout"
        case .transportFailure: "transport"
        case .serverAPI(let status): "server_api_\(status.name)"
        case .notSent: "not_sent"
        }
    }
}
