import APIService
import Console
import Fleet
import FleetConfiguration
import Lanes
import Logging
import Observability
import Operations
import ServiceLifecycle

/// The composition root: what each long-running process runs, built from its role and settings,
/// and run as one `ServiceGroup` that SIGTERM and SIGINT shut down gracefully.
///
/// The group starts the services together and stops them in reverse order, one after the other:
/// so the list reads bottom-up. Metrics come first (they stop last, after the work they report
/// on); a worker's lease keeper comes before its processors (held jobs keep their leases while
/// the processors drain), and its heartbeat and reclaimer after them (they stop first, so that no
/// job is reclaimed into a processor that is leaving, and the processors' deregistration is the
/// last word on who is alive).
public enum ProcessRoot {
    public enum Role: Sendable {
        /// `receiptfleet worker [--with-relay]`.
        case worker(withRelay: Bool)
        /// `receiptfleet relay`.
        case relay
        /// `receiptfleet schedule --every`.
        case scheduler(SchedulerLoop)
        /// `receiptfleet serve` (with the console's sampler when it mounts the console).
        case api(APIServer)
        /// `receiptfleet console`.
        case console(ConsoleServer)

        /// What the process logs once its services have stopped.
        var stopped: Logger.Message {
            switch self {
            case .worker: "stopped"
            case .relay: "relay stopped"
            case .scheduler: "scheduler stopped"
            case .api: "API stopped"
            case .console: "console stopped"
            }
        }
    }

    /// The role's services, in start order.
    public static func services(
        for role: Role, settings: FleetSettings, metrics: ProcessMetrics, logger: Logger, clock: (any FleetClock)? = nil,
        signals: DutySignals? = nil, onMetricsListening: @escaping @Sendable (MetricsAddress) async -> Void = { _ in }
    ) -> [any Service] {
        var services: [any Service] = []
        let context = ProcessContext(settings: settings, metrics: metrics.fleet, logger: logger, clock: clock, signals: signals)
        if let server = MetricsServer(settings: settings, metrics: metrics, clock: context.clock, logger: logger, onListening: onMetricsListening) {
            services.append(server)
        }
        switch role {
        case .worker(let withRelay):
            let jobs = JobsInHand(processors: settings.concurrency)
            services += [LeaseKeeper(context, jobs: jobs), Promoter(context), ConsumerCleanup(context)]
            if withRelay { services += relay(context) }
            services += [TimingsReporter(context), Processors(context, jobs: jobs), Reclaimer(context, jobs: jobs), Heartbeat(context)]
            // Refund requests are answered through the Server API only.
            if settings.serverAPI != nil { services.append(ConsumptionAnswering(context)) }
        case .relay:
            services += relay(context)
        case .scheduler(let loop):
            services.append(loop)
        case .api(let server):
            services += [reporter(of: server.fleetMetrics, context), server] + (server.consoleSampler.map { [$0] } ?? [])
        case .console(let server):
            services += [reporter(of: server.metrics, context), server, server.sampler]
        }
        return services
    }

    /// The reporter of a server's timings, which it keeps apart from the process's metrics.
    private static func reporter(of metrics: FleetMetrics, _ context: ProcessContext) -> TimingsReporter {
        TimingsReporter(ProcessContext(
            settings: context.settings, metrics: metrics, logger: context.logger, clock: context.clock, signals: context.signals))
    }

    private static func relay(_ context: ProcessContext) -> [any Service] {
        [OutboxRelayService(context), WebhookDispatchers(context)]
    }

    /// Runs the role's services until SIGTERM or SIGINT (then stops them gracefully, last first)
    /// or until one of them ends, and says so; rethrows the first failure.
    public static func run(
        _ role: Role, settings: FleetSettings, metrics: ProcessMetrics = ProcessMetrics(), logger: Logger
    ) async throws {
        try await run(services(for: role, settings: settings, metrics: metrics, logger: logger), logger: logger)
        logger.info(role.stopped)
    }

    /// Runs `services` until SIGTERM or SIGINT (then stops them gracefully, last first) or until
    /// one of them ends; rethrows the first failure.
    public static func run(_ services: [any Service], logger: Logger) async throws {
        logger.debug("descriptor limit", metadata: ["open-files": "\(DescriptorLimit.raise())"])
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
