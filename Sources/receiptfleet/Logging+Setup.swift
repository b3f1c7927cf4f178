import Foundation
import Logging
import Synchronization

/// Logs go to standard error, one line each, at the level asked for (info by default).
/// Set up once per process; later calls keep the first level.
func setUpLogging(level text: String?) -> Logger {
    let level = text.flatMap(Logger.Level.init(rawValue:)) ?? .info
    if loggingBootstrapped.exchange(true, ordering: .relaxed) == false {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
    return Logger(label: "receiptfleet")
}

private let loggingBootstrapped = Atomic<Bool>(false)
