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
        do {
            try await ProcessRoot.run([ThreadService("rf-demo", grace: grace, logger: logger) { _, interrupted in
                let result = Result { try demo.run(configured: configured, rateLimit: rateLimit, interrupted: interrupted) }
                outcome.result.withLock { $0 = result }
            }], logger: logger)
        } catch {
            // The group ends as soon as the demo's thread does, and calls that "finished unexpectedly":
            // what the demo ended with says what happened.
            guard outcome.result.withLock({ $0 }) != nil else { throw error }
        }
        try outcome.result.withLock { $0 }?.get()
    }
}

/// What the demo's thread ended with (nil: it has not), for the process to return or throw.
private final class Outcome: Sendable {
    let result = Mutex<Result<Void, any Error>?>(nil)
}
