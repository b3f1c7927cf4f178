import Foundation
import RedisClient

/// A lock that one process of the fleet holds at a time (the nightly scheduler takes one so two
/// schedulers never overlap). It expires by itself if its holder dies, so the holder renews it
/// while it works.
public final class FleetLock {
    public let name: String
    /// Tells this holder apart from any other: a renewal or release by anyone else does nothing.
    public let token = UUID().uuidString
    private let key: String
    private let connection: RedisConnection

    public init(_ name: String, connection: RedisConnection, keys: QueueKeys) {
        self.name = name
        self.key = keys.lock(name)
        self.connection = connection
    }

    /// Takes the lock for `lifetime` if nobody holds it; returns whether it was taken.
    public func acquire(for lifetime: Duration) throws(QueueError) -> Bool {
        try connection.execute(["SET", key, token, "NX", "PX", lifetime.wholeMilliseconds]) != .null
    }

    /// Extends the lock to `lifetime` from now; false if it was lost (expired, or taken over).
    public func renew(for lifetime: Duration) throws(QueueError) -> Bool {
        try connection.evaluate(Scripts.renewLock, keys: [key], arguments: [token, lifetime.wholeMilliseconds]).int == 1
    }

    /// Releases the lock if this holder still has it.
    public func release() throws(QueueError) {
        try connection.evaluate(Scripts.releaseLock, keys: [key], arguments: [token])
    }
}
