import Fleet
import FleetConfiguration
import Foundation
import Hummingbird
import Lanes
import Logging
import NIOCore
import Operations
import ServiceLifecycle

/// A fleet process's `/metrics`, `/healthz` and `/readyz` (docs/metrics.md), on Hummingbird: the
/// first service of every long-running fleet process (`ProcessRoot`), so that it starts first and
/// stops last, after the work it reports on.
public struct MetricsServer: NamedService {
    let requested: MetricsAddress
    let metrics: ProcessMetrics
    let gauges: FleetGauges
    let logger: Logger
    let onListening: @Sendable (MetricsAddress) async -> Void

    /// nil when `settings.metricsAddress` is off. `onListening` hears the address bound (the port
    /// is the one bound, also when port 0 was asked for).
    public init?(
        settings: FleetSettings, metrics: ProcessMetrics, clock: any FleetClock, logger: Logger,
        onListening: @escaping @Sendable (MetricsAddress) async -> Void = { _ in }
    ) {
        guard let requested = settings.metricsAddress else { return nil }
        self.requested = requested
        self.metrics = metrics
        self.logger = logger
        self.onListening = onListening
        gauges = FleetGauges(settings: settings, clock: clock, factory: metrics.factory)
    }

    /// Serves until graceful shutdown, then closes the gauges' connections to Redis and PostgreSQL.
    /// Throws `MetricsServerError` when it cannot listen where it was told to (the port is taken, say).
    public func run() async throws {
        let (requested, logger, onListening) = (requested, logger, onListening)
        let application = Application(
            router: Self.routes(metrics: metrics, gauges: gauges),
            configuration: .init(address: .hostname(requested.host, port: requested.port), serverName: "receiptfleet"),
            onServerRunning: { channel in
                let bound = MetricsAddress(host: requested.host, port: channel.localAddress?.port ?? requested.port)
                logger.info("serving metrics", metadata: ["url": "http://\(bound)/metrics"])
                await onListening(bound)
            },
            logger: logger)
        let failure: (any Error)?
        do {
            try await application.run()
            failure = nil
        } catch {
            failure = error
        }
        // Waits for the gauges' lane on a thread of its own, not on the cooperative pool.
        _ = try? await onNewThread(named: "rf-metrics-stop") { [gauges] in gauges.shutdown() }
        if let failure { throw MetricsServerError(address: requested, reason: failure) }
    }

    private static func routes(metrics: ProcessMetrics, gauges: FleetGauges) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("metrics") { _, _ in
            _ = await gauges.refresh()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
        }
        router.get("healthz") { _, _ in
            json(.ok, ["status": "alive"])
        }
        router.get("readyz") { _, _ in
            let readiness = await gauges.refresh()
            return readiness.isReady
                ? json(.ok, ["status": "ready"])
                : json(.serviceUnavailable, ["status": "not ready", "reason": readiness.problems.joined(separator: "; ")])
        }
        return router
    }

    private static func json(_ status: HTTPResponse.Status, _ object: [String: String]) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let body = (try? JSONEncoder().encode(object)) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// The metrics server could not listen where it was told to.
public struct MetricsServerError: Error, CustomStringConvertible {
    public let address: MetricsAddress
    public let reason: any Error

    public var description: String {
        let problem = (reason as? IOError)?.errnoCode == EADDRINUSE
            ? "the address is in use: another process listens there (each receiptfleet process on a host needs a port of its own)"
            : "\(reason)"
        return "cannot serve metrics on \(address): \(problem). Choose another address with --metrics-address HOST:PORT "
            + "(or RECEIPTFLEET_METRICS_ADDRESS, or \"metrics-address\" in the configuration file); "
            + "port 0 picks a free port, off serves no metrics"
    }
}
