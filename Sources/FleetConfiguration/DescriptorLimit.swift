#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open descriptors (RLIMIT_NOFILE): every caller's connection, and every
/// connection of its own (Redis, PostgreSQL, Apple, webhooks) and file. systemd and most shells
/// start a process at a soft limit of 1,024 although the hard one is far higher.
public enum DescriptorLimit {
    /// Descriptors a server keeps for its own connections however many callers come: its lanes'
    /// Redis, PostgreSQL and HTTP connections (three a lane, 64 lanes at most), logs and spares.
    public static let reserve = 256

    /// Raises the soft limit to the hard one, as a server that may hold thousands of connections
    /// should (Go's runtime does the same). Returns the soft limit afterwards.
    @discardableResult
    public static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }

    /// The soft limit now.
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// How many callers' connections one server of this process may hold at once: all it may open,
    /// less the reserve (at least 16).
    public static var connectionCap: Int { max(16, current - reserve) }
}
