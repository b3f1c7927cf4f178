import AppStore
import Foundation
import JobQueue
import Lanes

/// The Timings page (as Sidekiq Web's Metrics page shows each job class's execution times): how
/// long Apple took per endpoint and how long a job took from its first enqueue to done, fleet-wide,
/// over the last hour, 24 hours or 7 days: p50, p99 and the mean, a chart of the percentiles per
/// minute or hour, and each series' distribution over the window. Built from the fleet's timings in
/// Redis (`FleetTimings`), minute by minute over the hour, hour by hour beyond.
struct TimingsView {
    let chrome: Chrome
    var windowTitle: String
    /// The hour, day and week links, the shown one marked.
    var windows: [WindowLink]
    /// Jobs from first enqueue to done: their table, chart and distribution.
    var jobs: Table
    var jobsChart: Chart
    var jobsDistribution: Distribution?
    /// Apple's endpoints called in the window, the most called first.
    var endpoints: Table
    var appleChart: Chart
    var appleDistributions: [Distribution]

    /// A table of series (`Templates.timingTable`): what they are, what they count, a row each.
    struct Table {
        var id: String
        var what: String
        var counted: String
        var rows: [Row]
    }

    /// One series over the window.
    struct Row {
        /// `data-series`: `jobs`, or the endpoint's name as the metrics label it.
        var series: String
        var name: String
        var count: String
        var p50: String
        var p99: String
        var mean: String

        init(series: String, name: String, _ histogram: TimingHistogram) {
            (self.series, self.name, count) = (series, name, Shown.count(Int(histogram.count)))
            let shown = { (duration: Duration?) in duration.map { Shown.timing($0.seconds) } ?? "-" }
            (p50, p99, mean) = (shown(histogram.quantile(0.5)), shown(histogram.quantile(0.99)), shown(histogram.mean))
        }
    }

    /// A series' timings over the window, bucket by bucket: one bar per bucket (or per few, to keep
    /// at most `maxBars`) from its shortest to its longest, as high as its count.
    struct Distribution {
        var series: String
        var name: String
        var label: String
        /// The tallest bar's count: the axis's top.
        var most: String
        /// The axis's ends: the first bar's lower bound, the last one's upper.
        var shortest: String
        var longest: String
        var bars: [Bar]

        struct Bar {
            var x: String
            var y: String
            var width: String
            var height: String
            var title: String
        }

        static let maxBars = 40
        static let width = 600.0, height = 80.0

        init?(series: String, name: String, _ histogram: TimingHistogram, counting noun: String) {
            guard let first = histogram.counts.keys.min(), let last = histogram.counts.keys.max() else { return nil }
            let perBar = (last - first) / Self.maxBars + 1
            let groups = stride(from: first, through: last, by: perBar).map { start in
                (start, start + perBar - 1, (start..<start + perBar).reduce(Int64(0)) { $0 + (histogram.counts[$1] ?? 0) })
            }
            let most = groups.map(\.2).max() ?? 1
            let barWidth = Self.width / Double(groups.count)
            let lowerBound = { (index: Int) in index == 0 ? 0 : TimingHistogram.upperBound(of: index - 1).seconds }
            (self.series, self.name, label) = (series, name, "how long \(name) took: \(noun) per bucket")
            (self.most, shortest) = (Shown.count(Int(most)), Shown.timing(lowerBound(first)))
            longest = Shown.timing(TimingHistogram.upperBound(of: groups.last!.1).seconds)
            bars = groups.enumerated().map { position, group in
                let (from, to, count) = group
                let height = (Self.height - 2) * Double(count) / Double(most)
                return Bar(
                    x: String(format: "%.1f", Double(position) * barWidth), y: String(format: "%.1f", Self.height - height),
                    width: String(format: "%.1f", barWidth * 0.85), height: String(format: "%.1f", height),
                    title: "\(Shown.timing(lowerBound(from)))–\(Shown.timing(TimingHistogram.upperBound(of: to).seconds)): "
                        + "\(Shown.count(Int(count))) \(noun)")
            }
        }
    }

    /// `spans`: the window's minutes (over an hour) or hours, oldest first, each with its timings by series.
    init(spans: [(start: Int64, timings: [String: TimingHistogram])], span: FleetTimings.Span, window: ChartWindow, now: Int64,
         viewer: OpsConsole.Operator) {
        chrome = Chrome("Timings", tab: .timings, viewer: viewer)
        windowTitle = window.title
        windows = window.links(to: "/console/timings")
        let total = spans.reduce(into: [String: TimingHistogram]()) { total, span in
            total.merge(span.timings) { $0.merged($1) }
        }
        // A point stands at its span's end, or now for the span still going.
        func points(_ series: String, _ quantile: Double) -> History.Points {
            spans.compactMap { start, timings in
                timings[series]?.quantile(quantile).map { (min(start + span.milliseconds, now), $0.seconds) }
            }
        }
        let format = { (seconds: Double) in Shown.timing(seconds) }

        let jobs = total[FleetTimings.jobs] ?? TimingHistogram()
        self.jobs = Table(id: "job-timings", what: "Jobs", counted: "Done", rows: [Row(series: FleetTimings.jobs, name: "Every job", jobs)])
        jobsChart = Chart(
            label: "time from first enqueue to done: p50 and p99",
            lines: [("p50", "", points(FleetTimings.jobs, 0.5)), ("p99", "s-retried", points(FleetTimings.jobs, 0.99))],
            now: now, window: window, aggregate: .percentiles("p50 and p99 of the jobs done"), bucketMs: span.milliseconds,
            format: format)
        jobsDistribution = Distribution(series: FleetTimings.jobs, name: "jobs", jobs, counting: "jobs")

        let called = AppleEndpoint.allCases.compactMap { endpoint in total[endpoint.rawValue].map { (endpoint, $0) } }
            .sorted { $0.1.count > $1.1.count }
        let name = { (endpoint: AppleEndpoint) in endpoint.rawValue.replacingOccurrences(of: "_", with: " ") }
        endpoints = Table(id: "apple-timings", what: "Endpoint", counted: "Calls",
                          rows: called.map { Row(series: $0.0.rawValue, name: name($0.0), $0.1) })
        var styles = ["", "s-1", "s-2", "s-3"].makeIterator()
        appleChart = Chart(
            label: "Apple's p99 per endpoint",
            lines: called.prefix(4).map { endpoint, _ in (name(endpoint), styles.next() ?? "", points(endpoint.rawValue, 0.99)) },
            now: now, window: window, aggregate: .percentiles("p99 of the calls"), bucketMs: span.milliseconds, format: format)
        appleDistributions = called.compactMap { Distribution(series: $0.0.rawValue, name: name($0.0), $0.1, counting: "calls") }
    }
}
