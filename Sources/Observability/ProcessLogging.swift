import Logging
import Synchronization

/// A process's logs: to standard error, one line each, at the level asked for. Set up once per
/// process; later calls keep the first level.
public enum ProcessLogging {
    /// Sets the process's logging up at `level` (the first call only), and returns its logger.
    public static func bootstrap(level: Logger.Level) -> Logger {
        if bootstrapped.exchange(true, ordering: .relaxed) == false {
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
        return Logger(label: "receiptfleet")
    }

    private static let bootstrapped = Atomic<Bool>(false)
}
