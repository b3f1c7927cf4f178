import Fleet
import FleetConfiguration
import Lanes
import Logging
import Observability
import ProcessRoot
import ServiceLifecycle

/// Services run in this process as `receiptfleet` runs them (one `ServiceGroup`, stopped
/// gracefully, last first), until `stop()`.
public final class RunningServices: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    public init(_ services: [any Service], logger: Logger = Logger(label: "test-services")) {
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }, logger: logger))
        self.group = group
        running = Task { try await group.run() }
    }

    /// A worker process's services (no metrics server, unless `metricsAddress` is set on purpose).
    /// On `clock` (the system's unless a test drives it), telling `signals` what its duties did.
    public static func worker(
        settings: FleetSettings, metrics: ProcessMetrics = ProcessMetrics(), withRelay: Bool = false,
        logger: Logger = Logger(label: "test-worker"), clock: any FleetClock = SystemClock(), signals: DutySignals? = nil
    ) -> RunningServices {
        var settings = settings
        settings.metricsAddress = nil
        return RunningServices(
            ProcessRoot.services(
                for: .worker(withRelay: withRelay), settings: settings, metrics: metrics, logger: logger, clock: clock, signals: signals),
            logger: logger)
    }

    /// A relay process's services, without a metrics server.
    public static func relay(
        settings: FleetSettings, metrics: ProcessMetrics = ProcessMetrics(), logger: Logger = Logger(label: "test-relay")
    ) -> RunningServices {
        var settings = settings
        settings.metricsAddress = nil
        return RunningServices(ProcessRoot.services(for: .relay, settings: settings, metrics: metrics, logger: logger), logger: logger)
    }

    /// Waits until the services have stopped by themselves (one ended or failed), rethrowing the failure.
    public func stopped() async throws {
        try await running.value
    }

    /// Runs `body`, then stops the services, also when `body` throws.
    public func whileRunning<T>(_ body: () async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await body()
        } catch {
            try? await stop()
            throw error
        }
        try await stop()
        return result
    }

    /// Cancels the services (no grace): for a test's `defer`, which cannot wait.
    public func cancel() {
        running.cancel()
    }

    /// Shuts the services down gracefully, last first, and waits until they have stopped.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
