import RedisClient

/// Everything the job queue can throw. No case carries a secret: Redis errors never include the
/// password, and job texts hold only ids.
public enum QueueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Talking to Redis failed; the payload says how, with Redis's own message.
    case redis(RedisError)

    /// A setting or argument is unusable; the text says which and what is allowed.
    case invalidArgument(String)

    /// A job's text (from a stream entry, the delayed set or a dead letter) is not a job.
    case undecodableJob(String)

    /// Redis answered in a shape this code does not expect (a script or server version mismatch).
    case unexpectedReply(operation: String, reply: String)

    public var description: String {
        switch self {
        case .redis(let error):
            "Job queue: \(error)"
        case .invalidArgument(let reason):
            "Job queue: invalid argument: \(reason)"
        case .undecodableJob(let reason):
            "Job queue: cannot decode a job: \(reason)"
        case .unexpectedReply(let operation, let reply):
            "Job queue: unexpected reply to \(operation): \(reply). "
                + "Check that Redis is version 7 or later and that all workers run the same release."
        }
    }
}
