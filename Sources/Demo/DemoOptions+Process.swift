import FleetConfiguration
import Lanes
import Logging
import ProcessRoot
import Synchronization

extension DemoOptions {
    /// The demo as a process: it runs on a thread of its own as the one service of the process's
    /// group, so that SIGTERM and SIGINT reach it as they reach every long-running command, through
    /// the composition root, which sets its stop signal; it stops what it started between its steps.
    public func run(configured: FleetSettings, rateLimit: Double) async throws {
        let (demo, outcome) = (self, Outcome())
        let logger = Logger(label: "receiptfleet-demo")
        // The grace covers the demo's own shutdown: each process it started gets its drain grace.
        let grace = configured.drainGrace + .seconds(30)
        try await ProcessRoot.run([ThreadService("rf-demo", grace: grace, logger: logger) { _, interrupted in
            let result = Result { try demo.run(configured: configured, rateLimit: rateLimit, interrupted: interrupted) }
            outcome.result.withLock { $0 = result }
        }], logger: logger)
        try outcome.result.withLock { $0 }.get()
    }
}

/// What the demo's thread ended with, for the process to return or throw.
private final class Outcome: Sendable {
    let result = Mutex<Result<Void, any Error>>(.success(()))
}
