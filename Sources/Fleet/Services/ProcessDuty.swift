import Lanes
import Logging

/// What every background duty of a process is given: its settings, where it counts, where it logs.
public struct ProcessContext: Sendable {
    public let settings: FleetSettings
    public let metrics: FleetMetrics
    public let logger: Logger

    public init(settings: FleetSettings, metrics: FleetMetrics, logger: Logger) {
        (self.settings, self.metrics, self.logger) = (settings, metrics, logger)
    }
}

/// A long-running duty of a fleet process: a ServiceLifecycle service made from the process's
/// context (`ProcessRoot` lists them by role).
public protocol ProcessDuty: NamedService {
    var context: ProcessContext { get }
}

extension ProcessDuty {
    var settings: FleetSettings { context.settings }
    var metrics: FleetMetrics { context.metrics }
    var logger: Logger { context.logger }
}
