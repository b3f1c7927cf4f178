import Foundation

/// How long something took, as counts in fixed buckets: log-spaced (four to a doubling, so a bucket
/// is 19 % wide) from 1 ms up to about 40 days, the same in every process, so histograms from any
/// number of processes and minutes add up bucket by bucket into one whose quantiles are those of
/// every timing together. Apple's calls (milliseconds to the 30 s timeout) and a job's time from its
/// first enqueue to done (seconds to days, through retries and pauses) share the bounds.
public struct TimingHistogram: Sendable, Equatable {
    /// Bucket index → how many timings fell in it: bucket `i` holds the timings above
    /// `upperBound(i - 1)` and up to `upperBound(i)`; bucket 0 those up to 1 ms.
    public private(set) var counts: [Int: Int64] = [:]
    /// Every timing added up, in µs (for the mean).
    public private(set) var sumMicroseconds: Int64 = 0

    public init() {}

    public init(counts: [Int: Int64], sumMicroseconds: Int64) {
        (self.counts, self.sumMicroseconds) = (counts.filter { $0.value > 0 }, sumMicroseconds)
    }

    /// Buckets to a doubling.
    static let perDoubling = 4.0
    /// The last bucket's index: it also holds everything longer than its bound (about 42 days).
    public static let lastBucket = 127

    /// The longest timing bucket `index` holds.
    public static func upperBound(of index: Int) -> Duration {
        .microseconds(Int64((1_000 * pow(2, Double(index) / perDoubling)).rounded()))
    }

    /// The bucket a timing falls in.
    public static func bucket(of duration: Duration) -> Int {
        let milliseconds = Double(duration.wholeMicroseconds) / 1_000
        guard milliseconds > 1 else { return 0 }
        // The small allowance keeps a timing exactly on a bound in the bucket it closes.
        return min(lastBucket, Int((perDoubling * log2(milliseconds) - 1e-9).rounded(.up)))
    }

    /// How many timings it holds.
    public var count: Int64 { counts.values.reduce(0, +) }

    public var isEmpty: Bool { counts.isEmpty }

    public mutating func record(_ duration: Duration) {
        counts[Self.bucket(of: duration), default: 0] += 1
        sumMicroseconds += max(0, duration.wholeMicroseconds)
    }

    /// Adds another histogram's timings to this one's.
    public mutating func merge(_ other: TimingHistogram) {
        counts.merge(other.counts, uniquingKeysWith: +)
        sumMicroseconds += other.sumMicroseconds
    }

    public func merged(_ other: TimingHistogram) -> TimingHistogram {
        var sum = self
        sum.merge(other)
        return sum
    }

    /// The timing below which the fraction `quantile` of them fall (0.5: the median; 0.99: p99),
    /// placed within its bucket as if the bucket's timings were spread evenly on a log scale; nil
    /// when it holds none.
    public func quantile(_ quantile: Double) -> Duration? {
        let total = count
        guard total > 0 else { return nil }
        let rank = max(1, quantile * Double(total))
        var below: Int64 = 0
        for index in counts.keys.sorted() {
            let inBucket = counts[index]!
            guard Double(below + inBucket) >= rank else {
                below += inBucket
                continue
            }
            let fraction = (rank - Double(below)) / Double(inBucket)
            let upper = Double(Self.upperBound(of: index).wholeMicroseconds)
            guard index > 0 else { return .microseconds(Int64(upper * fraction)) }
            let lower = Double(Self.upperBound(of: index - 1).wholeMicroseconds)
            return .microseconds(Int64((lower * pow(upper / lower, fraction)).rounded()))
        }
        return Self.upperBound(of: counts.keys.max()!)
    }

    /// The timings' average; nil when it holds none.
    public var mean: Duration? {
        let total = count
        return total > 0 ? .microseconds(sumMicroseconds / total) : nil
    }
}
