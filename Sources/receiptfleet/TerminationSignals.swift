import Dispatch
import Foundation
import Lanes
import Synchronization

/// SIGTERM and SIGINT, caught instead of ending the process, so that a command can stop cleanly:
/// wait for one (`wait`), or look now and then whether one came (`received`).
final class TerminationSignals {
    private let state = State()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        let queue = DispatchQueue(label: "receiptfleet.signals")
        for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            signal(number, SIG_IGN)  // handled by the source below instead of ending the process
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [state] in state.receive(name) }
            source.resume()
            sources.append(source)
        }
    }

    /// The name of the first signal that arrived, if one did.
    var received: String? { state.name.withLock { $0 } }

    /// Blocks until a signal arrives, and returns its name.
    func wait() -> String {
        state.arrived.wait()
        state.arrived.signal()  // for any later waiter
        return received ?? "signal"
    }

    /// Waits until a signal arrives, and returns its name; the waiting blocks a thread of its
    /// own, never one of Swift's cooperative threads (which an async command's server needs).
    func wait() async -> String {
        let state = state
        _ = try? await onNewThread(named: "rf-signals") {
            state.arrived.wait()
            state.arrived.signal()  // for any later waiter
        }
        return received ?? "signal"
    }

    private final class State: Sendable {
        let name = Mutex<String?>(nil)
        let arrived = DispatchSemaphore(value: 0)

        func receive(_ signal: String) {
            let first = name.withLock { name in
                defer { name = name ?? signal }
                return name == nil
            }
            if first { arrived.signal() }
        }
    }
}
