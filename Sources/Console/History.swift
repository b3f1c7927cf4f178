import Foundation

/// How far back the charts look: the last hour in 1-minute buckets, the last day in 5-minute ones
/// and the last week in hourly ones, so that no chart draws more than a few hundred points. (The
/// Timings page's points are minutes over the hour and hours beyond: `FleetTimings.Span`.)
enum ChartWindow: String, CaseIterable {
    case hour = "1h", day = "24h", week = "7d"

    var duration: Duration {
        switch self {
        case .hour: .seconds(3_600)
        case .day: .seconds(86_400)
        case .week: .seconds(7 * 86_400)
        }
    }

    var milliseconds: Int64 { duration.components.seconds * 1_000 }

    /// The width of one point of the overview's charts.
    var bucketMs: Int64 {
        switch self {
        case .hour: 60_000
        case .day: 300_000
        case .week: 3_600_000
        }
    }

    var title: String {
        switch self {
        case .hour: "last hour"
        case .day: "last 24 hours"
        case .week: "last 7 days"
        }
    }

    /// A link to `page` over each window, this one marked current.
    func links(to page: String) -> [WindowLink] {
        Self.allCases.map { other in
            WindowLink(title: other.title, link: "\(page)?window=\(other.rawValue)", current: other == self, last: other == .week)
        }
    }

    /// An axis label for a moment in this window: the time of day, with the date over a week.
    func label(_ ms: Int64) -> String {
        let time = Shown.time(Date(timeIntervalSince1970: Double(ms) / 1_000))  // "2026-11-24 02:00:00 UTC"
        return self == .week ? String(time.dropFirst(5).prefix(11)) : String(time.dropFirst(11).prefix(5))
    }
}

/// A link to a page with its figures over another window (`Templates.windowLinks`).
struct WindowLink {
    var title: String
    var link: String
    var current: Bool
    var last: Bool
}

/// The history charts' series, from the minute samples: counters turned into rates per minute,
/// averaged over each of the window's buckets, and gauges at their peak in each. Every window
/// reads the same minute samples the same way, so an hour's points and a day's agree: a day's
/// point is the peak, or the average, of the hour's points it spans.
enum History {
    typealias Points = [(at: Int64, value: Double)]

    /// A counter's rate per minute, per bucket (a counter that fell, as when Redis lost it, gives no rate there).
    static func perMinute(_ samples: [ConsoleSample], bucketMs: Int64, _ counter: (ConsoleSample.Figures) -> Int64) -> Points {
        var buckets: [Int64: (at: Int64, count: Double, minutes: Double)] = [:]
        for (earlier, later) in zip(samples, samples.dropFirst()) {
            let (before, after) = (counter(earlier.figures), counter(later.figures))
            guard after >= before, later.at > earlier.at else { continue }
            let bucket = later.at / bucketMs
            let sum = buckets[bucket] ?? (later.at, 0, 0)
            buckets[bucket] = (max(sum.at, later.at), sum.count + Double(after - before), sum.minutes + Double(later.at - earlier.at) / 60_000)
        }
        return buckets.values.map { ($0.at, $0.count / $0.minutes) }.sorted { $0.at < $1.at }
    }

    /// A gauge, per bucket: the highest of the bucket's samples.
    static func peak(_ samples: [ConsoleSample], bucketMs: Int64, _ gauge: (ConsoleSample.Figures) -> Double) -> Points {
        var buckets: [Int64: (at: Int64, peak: Double)] = [:]
        for sample in samples {
            let peak = buckets[sample.at / bucketMs] ?? (sample.at, gauge(sample.figures))
            buckets[sample.at / bucketMs] = (max(peak.at, sample.at), max(peak.peak, gauge(sample.figures)))
        }
        return buckets.values.map { ($0.at, $0.peak) }.sorted { $0.at < $1.at }
    }

    /// A gauge, per bucket: its average over the bucket's samples.
    static func average(_ samples: [ConsoleSample], bucketMs: Int64, _ gauge: (ConsoleSample.Figures) -> Double) -> Points {
        var buckets: [Int64: (at: Int64, sum: Double, count: Double)] = [:]
        for sample in samples {
            let sum = buckets[sample.at / bucketMs] ?? (sample.at, 0, 0)
            buckets[sample.at / bucketMs] = (max(sum.at, sample.at), sum.sum + gauge(sample.figures), sum.count + 1)
        }
        return buckets.values.map { ($0.at, $0.sum / $0.count) }.sorted { $0.at < $1.at }
    }

    /// Apple's answers per minute, by status: the `most` commonest statuses of the window.
    static func answers(_ samples: [ConsoleSample], bucketMs: Int64, most: Int = 4) -> [(status: String, points: Points)] {
        let totals = samples.reduce(into: [String: Int]()) { totals, sample in
            for (status, count) in sample.figures.answers { totals[status, default: 0] += count }
        }
        let statuses = totals.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(most).map(\.key)
        return statuses.map { status in (status, average(samples, bucketMs: bucketMs) { Double($0.answers[status] ?? 0) }) }
    }
}
