import AppStoreSimulator
import Foundation

/// The App Store simulator on a real loopback port, for tests that talk to it over HTTP.
public struct LiveSimulator: Sendable {
    public let store: SimulatedAppStore
    public let port: Int

    public var productionURL: String { "http://127.0.0.1:\(port)/verifyReceipt" }
    public var sandboxURL: String { "http://127.0.0.1:\(port)/sandbox/verifyReceipt" }
    /// The App Store Server API's two hosts, when the simulator was started with `serverAPI`.
    public var serverAPIProductionURL: String { "http://127.0.0.1:\(port)" }
    public var serverAPISandboxURL: String { "http://127.0.0.1:\(port)/sandbox" }

    /// Runs `body` while a simulator with `knobs` (its clock at `startMs`) serves on a free port.
    public static func with<T: Sendable>(
        knobs: FaultKnobs = FaultKnobs(), startMs: Int64? = nil, serverAPI: ServerAPISimulation? = nil,
        _ body: (LiveSimulator) async throws -> T
    ) async throws -> T {
        try await serving(SimulatedAppStore(knobs: knobs, clock: SimulatorClock(startMs: startMs), serverAPI: serverAPI), body)
    }

    /// Runs `body` while `store` serves on a free port.
    public static func serving<T: Sendable>(_ store: SimulatedAppStore, _ body: (LiveSimulator) async throws -> T) async throws -> T {
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let server = RunningServices([store.server(host: "127.0.0.1", port: 0) { listening.yield($0) }])
        return try await server.whileRunning {
            guard let port = await ports.first(where: { _ in true }) else {
                throw SimulatorDidNotStart()
            }
            return try await body(LiveSimulator(store: store, port: port))
        }
    }

    struct SimulatorDidNotStart: Error {}
}
