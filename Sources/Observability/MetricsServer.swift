import Fleet
import Foundation
import Hummingbird
import Lanes
import Logging
import NIOCore
import ServiceLifecycle

/// A fleet process's `/metrics`, `/healthz` and `/readyz` (docs/metrics.md), on Hummingbird.
///
/// Every long-running fleet command starts one with the same call, before its own work:
/// `let server = try await MetricsServer.start(settings: settings, metrics: metrics, logger: logger)`,
/// then `await server?.stop()` when it ends.
public final class MetricsServer: Sendable {
    /// Where it listens; the port is the one bound, also when port 0 was asked for.
    public let address: MetricsAddress
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    private let gauges: FleetGauges

    private init(address: MetricsAddress, group: ServiceGroup, running: Task<Void, any Error>, gauges: FleetGauges) {
        self.address = address
        self.group = group
        self.running = running
        self.gauges = gauges
    }

    /// Serves at `settings.metricsAddress` and returns once it listens; nil when that is off.
    /// Throws `MetricsServerError` when it cannot listen there (the port is taken, say).
    public static func start(settings: FleetSettings, metrics: ProcessMetrics, logger: Logger) async throws -> MetricsServer? {
        guard let requested = settings.metricsAddress else { return nil }
        let gauges = FleetGauges(settings: settings, factory: metrics.factory)
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: routes(metrics: metrics, gauges: gauges),
            configuration: .init(address: .hostname(requested.host, port: requested.port), serverName: "receiptfleet"),
            onServerRunning: { channel in
                listening.yield(channel.localAddress?.port ?? requested.port)
                listening.finish()
            },
            logger: logger)
        // No signals: the process handles SIGTERM itself, and stops this server last.
        let group = ServiceGroup(services: [application], logger: logger)
        let running = Task {
            defer { listening.finish() }
            try await group.run()
        }
        guard let port = await ports.first(where: { _ in true }) else {
            await stop(gauges)
            let reason: any Error = if case .failure(let error) = await running.result { error } else { CancellationError() }
            throw MetricsServerError(address: requested, reason: reason)
        }
        let bound = MetricsAddress(host: requested.host, port: port)
        logger.info("serving metrics", metadata: ["url": "http://\(bound)/metrics"])
        return MetricsServer(address: bound, group: group, running: running, gauges: gauges)
    }

    /// Stops listening once the requests in progress are answered, and closes the connections to
    /// Redis and PostgreSQL.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
        await Self.stop(gauges)
    }

    private static func stop(_ gauges: FleetGauges) async {
        _ = try? await onNewThread(named: "rf-metrics-stop") { gauges.shutdown() }
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
