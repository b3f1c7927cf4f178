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

    /// Extends a lock's lifetime if the caller still holds it.
    /// KEYS[1] the lock. ARGV[1] the holder's token, ARGV[2] the new lifetime in ms.
    /// Returns 1 if extended, 0 if the lock is gone or someone else's.
    private static let renewLockScript = RedisScript("""
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        return redis.call('PEXPIRE', KEYS[1], ARGV[2])
        """)

    /// Extends the lock to `lifetime` from now; false if it was lost (expired, or taken over).
    public func renew(for lifetime: Duration) throws(QueueError) -> Bool {
        try connection.evaluate(Self.renewLockScript, keys: [key], arguments: [token, lifetime.wholeMilliseconds]).int == 1
    }

    /// Releases a lock if the caller still holds it.
    /// KEYS[1] the lock. ARGV[1] the holder's token. Returns 1 if released, 0 otherwise.
    private static let releaseLockScript = RedisScript("""
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        return redis.call('DEL', KEYS[1])
        """)

    /// Releases the lock if this holder still has it.
    public func release() throws(QueueError) {
        try connection.evaluate(Self.releaseLockScript, keys: [key], arguments: [token])
    }
}
