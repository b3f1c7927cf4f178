import Logging
import Synchronization

/// The lines logged through `handler`s, metadata included, for tests that read the logs.
public final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    /// A log handler writing here; each logger gets its own, as swift-log expects.
    public var handler: Handler { Handler(log: self) }

    public struct Handler: LogHandler {
        let log: CapturedLog
        public var metadata: Logger.Metadata = [:]
        public var logLevel: Logger.Level = .trace

        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        public func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            log.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}
