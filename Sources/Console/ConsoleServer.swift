import Fleet
import Foundation
import Hummingbird
import Logging

/// `receiptfleet console`: the ops console alone, for operators who run no API.
public struct ConsoleServer: Sendable {
    let console: OpsConsole
    let host: String
    let port: Int
    let logger: Logger

    /// `port` 0 picks a free one (`run` reports the one bound).
    public init(settings: ConsoleSettings, fleet: FleetSettings, host: String, port: Int, logger: Logger) throws {
        console = try OpsConsole(settings: settings, fleet: fleet, logger: logger)
        (self.host, self.port, self.logger) = (host, port, logger)
    }

    /// Serves until SIGTERM or SIGINT (or the task is cancelled), then closes the lanes.
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router()
        router.get("/") { _, _ in OpsConsole.redirect(to: "/console") }
        console.addRoutes(to: router)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "receiptfleet"),
            services: [console.sampler],
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        var failure: (any Error)?
        do { try await app.runService() } catch { failure = error }
        // Waits for the lanes' work in hand on a thread of its own, not on the cooperative pool.
        await withCheckedContinuation { finished in
            Thread { [console] in
                console.shutdown()
                finished.resume()
            }.start()
        }
        if let failure { throw failure }
    }
}
