import Foundation
import RedisClient

/// The fleet's timings in Redis: how long each of Apple's endpoints took to answer, and how long a
/// job took from its first enqueue to done, as `TimingHistogram`s by series (an endpoint's name,
/// or `jobs`). Every process adds what it timed every few seconds (`TimingsReporter` in Fleet) to
/// the minute and the hour it is in; since the buckets are the same everywhere, a minute's or an
/// hour's histogram is every process's together, and so is a window's, read as the sum of its
/// minutes or hours. The console's Timings page reads them.
///
/// Keys (`QueueKeys.timings`): one hash per minute, kept 2 hours (the last hour's window and chart),
/// and one per hour, kept 8 days (the last 24 hours' and 7 days'); fields `SERIES:BUCKET` (a
/// count) and `SERIES:sum` (µs). A busy fleet times a few series over a few dozen buckets, so an
/// hour's hash holds a few hundred fields, and the week some 200 hashes.
///
/// Blocking: used on a thread of its own (a duty's, or a console lane).
public struct FleetTimings {
    let connection: RedisConnection
    public let keys: QueueKeys

    public init(connection: RedisConnection, keys: QueueKeys) {
        (self.connection, self.keys) = (connection, keys)
    }

    /// The series of a job's time from its first enqueue to done (acked). Apple's are named by their endpoint.
    public static let jobs = "jobs"

    /// The spans timings are kept in.
    public enum Span: String, Sendable, CaseIterable {
        case minute, hour

        public var milliseconds: Int64 { self == .minute ? 60_000 : 3_600_000 }

        /// How long a span's hash outlives its last addition.
        var kept: Duration { self == .minute ? .seconds(2 * 3_600) : .seconds(8 * 86_400) }

        /// The start of the span `ms` (since the epoch) falls in.
        public func start(of ms: Int64) -> Int64 { ms - ms % milliseconds }
    }

    /// KEYS[1]  the minute's hash, KEYS[2] the hour's
    /// ARGV[1]  how long the minute's is kept, in ms; ARGV[2] the hour's; then field, count pairs
    /// Adds every count to both hashes and sets their expiry. Returns 0.
    static let addScript = RedisScript("""
        for i = 3, #ARGV, 2 do
            redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
            redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[1])
        redis.call('PEXPIRE', KEYS[2], ARGV[2])
        return 0
        """)

    /// Adds `timings` (by series) to the minute and the hour of `at` (ms since the epoch, by the
    /// process's clock), in one round trip.
    public func add(_ timings: [String: TimingHistogram], at: Int64) throws(QueueError) {
        var arguments: [any RedisArgument] = [Span.minute.kept.wholeMilliseconds, Span.hour.kept.wholeMilliseconds]
        for (series, histogram) in timings.sorted(by: { $0.key < $1.key }) where !histogram.isEmpty {
            for (bucket, count) in histogram.counts.sorted(by: { $0.key < $1.key }) { arguments += ["\(series):\(bucket)", count] }
            arguments += ["\(series):sum", histogram.sumMicroseconds]
        }
        guard arguments.count > 2 else { return }
        try connection.evaluate(
            Self.addScript, keys: [keys.timings(.minute, at: Span.minute.start(of: at)), keys.timings(.hour, at: Span.hour.start(of: at))],
            arguments: arguments)
    }

    /// The timings of the last `count` spans up to and including the one `now` (ms) is in, oldest
    /// first, each with its start (ms), in one round trip; a span nobody timed anything in is empty.
    public func read(_ span: Span, last count: Int, at now: Int64) throws(QueueError) -> [(start: Int64, timings: [String: TimingHistogram])] {
        let starts = (0..<count).reversed().map { span.start(of: now) - Int64($0) * span.milliseconds }
        let replies = try connection.send(starts.map { ["HGETALL", keys.timings(span, at: $0)] })
        return try zip(starts, replies).map { (start, reply) throws(QueueError) in
            guard let flat = reply.array else { throw .unexpectedReply(operation: "timings", reply: "\(reply)") }
            return (start, Self.histograms(flat))
        }
    }

    /// A hash's fields (`SERIES:BUCKET` count, `SERIES:sum` µs) as histograms by series; fields of
    /// another shape are passed over.
    static func histograms(_ flat: [RedisValue]) -> [String: TimingHistogram] {
        var counts: [String: [Int: Int64]] = [:]
        var sums: [String: Int64] = [:]
        for index in stride(from: 0, to: flat.count - 1, by: 2) {
            guard let field = flat[index].string, let colon = field.lastIndex(of: ":"),
                  let value = flat[index + 1].string.flatMap({ Int64($0) })
            else { continue }
            let (series, part) = (String(field[..<colon]), field[field.index(after: colon)...])
            if part == "sum" {
                sums[series] = value
            } else if let bucket = Int(part), (0...TimingHistogram.lastBucket).contains(bucket) {
                counts[series, default: [:]][bucket] = value
            }
        }
        return counts.reduce(into: [:]) { histograms, entry in
            histograms[entry.key] = TimingHistogram(counts: entry.value, sumMicroseconds: sums[entry.key] ?? 0)
        }
    }
}
