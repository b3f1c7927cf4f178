import Fleet
import FleetConfiguration
import Foundation
import Hummingbird
import Lanes
import Logging
import ServiceLifecycle

/// `receiptfleet console`: the ops console alone, for operators who run no API. Its sampler
/// (`sampler`) is a service of its own, run beside this one.
public struct ConsoleServer: NamedService {
    let console: OpsConsole
    let settings: ConsoleSettings
    let address: ListenAddress
    let logger: Logger
    let onListening: @Sendable (Int) async -> Void

    /// `port` 0 picks a free one; `onListening` hears the port bound.
    public init(
        settings: ConsoleSettings, fleet: FleetSettings, host: String, port: Int, logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        console = try OpsConsole(settings: settings, fleet: fleet, metrics: FleetMetrics(), logger: logger)
        (self.settings, address) = (settings, ListenAddress(host: host, port: port))
        (self.logger, self.onListening) = (logger, onListening)
    }

    public var sampler: ConsoleSampler { console.sampler }

    /// Where its calls to Apple are timed: the process's `TimingsReporter` reports them.
    public var metrics: FleetMetrics { console.metrics }

    /// Serves until graceful shutdown (or the task is cancelled), then closes the lanes.
    public func run() async throws {
        let router = Router(context: ConsoleServerContext.self)
        router.add(middleware: CallerMiddleware(trustedProxies: settings.trustedProxies))
        router.get("/") { _, _ in OpsConsole.redirect(to: "/console") }
        console.addRoutes(to: router)
        try await BoundedServer.serve(
            router, host: address.host, port: address.port, deadline: settings.requestDeadline, maxConnections: settings.maxConnections,
            logger: logger, onListening: onListening, closingOn: "rf-console-stop"
        ) { [console] in console.shutdown() }
    }
}

extension ConsoleServer {
    /// `receiptfleet console`'s server, from its configuration, which must name operator tokens;
    /// once listening, it says where, and for whom.
    public static func serving(_ configuration: ResolvedConfiguration, fleet: FleetSettings, logger: Logger) throws -> ConsoleServer {
        guard let settings = try ConsoleSettings(configuration) else {
            throw ConfigurationError(key: "console-tokens", source: "default", reason:
                "the console needs operator tokens: set RECEIPTFLEET_CONSOLE_TOKENS=NAME:TOKEN[,NAME:TOKEN…] or name a file with console-tokens-file")
        }
        let (host, port) = try configuration[Settings.address].parts
        let operators = settings.operators.names.joined(separator: ",")
        return try ConsoleServer(settings: settings, fleet: fleet, host: host, port: port, logger: logger) { port in
            logger.info("console listening", metadata: ["url": "http://\(host):\(port)/console", "operators": "\(operators)"])
        }
    }
}
