import RedisClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One thread's handle on the job queue: enqueue, reserve, settle and maintain jobs.
///
/// Every call blocks on the calling thread's own `RedisConnection`, so the handle is not
/// `Sendable`: each worker thread creates its own, with its own consumer name, and keeps it.
///
/// Delivery is reliable: a reserved job stays in its stream's pending list until it is acked,
/// retried, postponed or buried, each an atomic Lua move; if its worker dies, `reclaim` hands it to
/// another after the visibility timeout.
///
/// The Lua scripts (each above the method that runs it; their shared parts in `ScriptPrologue`)
/// make multi-step moves atomic: a job is always in exactly one of the ready streams (perhaps
/// reserved), the delayed set or the dead-letter stream, never in two and never in none; and a
/// subscription's bit in the queued bitmap is set exactly while a deduplicated job of it (see
/// `Job.Reason.isDeduplicated`) is in a ready stream or the delayed set.
public final class JobQueue: ClockedScriptRunner {
    public let keys: QueueKeys
    /// This handle's name in the consumer group; unique per process and thread.
    public let consumer: String
    public let retryPolicy: RetryPolicy
    /// The clock its scripts read (due times, failure times, heartbeats, ages): `.redis`, or `.driven` in tests.
    public let clock: ScriptClock
    let connection: RedisConnection

    /// Creates the ready streams and the consumer group if they do not exist yet, so an empty
    /// Redis works; a handle that only enqueues (`preparingGroups` false) leaves that to the
    /// workers, and so sends nothing to Redis until it is used. `consumer` must be unique in the
    /// fleet: use `consumerName(thread:)`.
    public init(
        connection: RedisConnection, keys: QueueKeys, consumer: String, retryPolicy: RetryPolicy = .standard,
        preparingGroups: Bool = true, clock: ScriptClock = .redis
    ) throws(QueueError) {
        guard !consumer.isEmpty else { throw .invalidArgument("the consumer name is empty") }
        self.connection = connection
        self.keys = keys
        self.consumer = consumer
        self.retryPolicy = retryPolicy
        self.clock = clock
        if preparingGroups { try createGroups() }
    }

    /// "host-pid-token-thread": unique per process (the random token tells apart processes that
    /// reuse a pid, e.g. in containers) and per worker thread.
    public static func consumerName(thread index: Int) -> String {
        "\(processName)-\(index)"
    }

    /// This process among the fleet's: its host, pid and a token that a reused pid does not repeat.
    public static let processName = "\(hostName)-\(getpid())-\(processToken)"

    /// This host's name, as `processName` carries it.
    public static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// XGROUP CREATE … MKSTREAM for both ready streams. The group starts at id 0, so jobs enqueued
    /// before any worker started are delivered too. BUSYGROUP (it exists) is the normal case.
    func createGroups() throws(QueueError) {
        let commands: [[any RedisArgument]] = keys.readyStreams.map {
            ["XGROUP", "CREATE", $0, QueueKeys.group, "0", "MKSTREAM"]
        }
        for case .error(let message) in try connection.send(commands) where !message.hasPrefix("BUSYGROUP") {
            throw .redis(.server(message))
        }
    }
}

/// Random per process, fixed for its lifetime.
private let processToken = String(UInt32.random(in: 0...UInt32.max), radix: 36)
