/// How an `OutboxRelay` publishes: where, how long the stream keeps entries, and how it waits.
public struct RelayConfiguration: Sendable {
    /// The start of every Redis key, holding the deployment's Redis Cluster hash tag, as for the job
    /// queue: "{rf}" (the default) publishes to "{rf}:events".
    public var keyPrefix: String
    /// How long the stream keeps an entry. Each XADD trims entries older than this (approximately:
    /// Redis drops whole internal nodes, so a few older entries may linger).
    public var retention: Duration
    /// How often the relay looks for events when no notification woke it. Notifications make the
    /// usual delay a few milliseconds; polling covers the ones lost while a connection was down.
    public var pollInterval: Duration
    /// The most events one transaction publishes.
    public var batchSize: Int

    public init(
        keyPrefix: String = "{rf}",
        retention: Duration = .seconds(7 * 24 * 3_600),
        pollInterval: Duration = .seconds(5),
        batchSize: Int = 500
    ) {
        self.keyPrefix = keyPrefix
        self.retention = retention
        self.pollInterval = pollInterval
        self.batchSize = batchSize
    }

    /// The Redis stream the events go to.
    public var streamKey: String { "\(keyPrefix):events" }

    func validate() throws(RelayError) {
        guard let open = keyPrefix.firstIndex(of: "{"), let close = keyPrefix[open...].firstIndex(of: "}"),
            keyPrefix.index(after: open) < close
        else {
            throw .invalidConfiguration(
                "the key prefix '\(keyPrefix)' has no {hash tag}: every key of a deployment must share one "
                    + "Redis Cluster hash tag, e.g. \"{rf}\" or \"{rf-staging}\"")
        }
        guard retention > .zero, pollInterval > .zero else {
            throw .invalidConfiguration("the retention and the poll interval must be positive")
        }
        guard batchSize > 0 else { throw .invalidConfiguration("the batch size must be at least 1") }
    }
}

/// A relay that cannot start.
public enum RelayError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let reason): "invalid relay configuration: \(reason)"
        }
    }
}
