/// A line chart with its axes: each line a polyline in the templates' 600 × 120 box, oldest at the
/// left, the whole window wide whatever the samples cover; the value axis from 0 to the peak, the
/// time axis from the window's start to now; a legend when there is more than one line; and what
/// one point stands for (`point`: an average, a peak or percentiles over its bucket),
/// which the chart's caption says, so no chart averages in silence.
struct Chart {
    /// How a point sums up its bucket.
    enum Aggregate {
        /// The bucket's average: of a rate, its count over its time.
        case average(String)
        /// The bucket's highest sample.
        case peak(String)
        /// Percentiles of the timings in the bucket.
        case percentiles(String)

        /// "each point is the average per minute over its 5 minutes", for a bucket `bucketMs` wide.
        func phrase(bucketMs: Int64) -> String {
            let bucket = switch bucketMs {
            case 60_000: "minute"
            case 3_600_000: "hour"
            default: "\(bucketMs / 60_000) minutes"
            }
            return switch self {
            case .average(let what): "each point is the average \(what) over its \(bucket)"
            case .peak(let what): "each point is the peak \(what) in its \(bucket)"
            case .percentiles(let what): "each point is the \(what) in its \(bucket)"
            }
        }
    }

    struct Line {
        var name: String
        /// The stroke's CSS class (`s-…` in the style sheet).
        var style: String
        var points: String
    }

    var label: String
    /// What one point stands for (`Aggregate.phrase`).
    var point: String
    var lines: [Line]
    var hasLegend: Bool
    var peak: String
    var middle: String
    var start: String
    var halfway: String
    var end = "now"

    static let width = 600.0, height = 120.0

    /// `lines` hold (ms since the epoch, value) points, each summing up a bucket `bucketMs` wide as
    /// `aggregate` says; the window ends at `now` (ms).
    init(label: String, lines: [(name: String, style: String, values: History.Points)], now: Int64, window: ChartWindow,
         aggregate: Aggregate, bucketMs: Int64, format: (Double) -> String) {
        self.label = label
        point = aggregate.phrase(bucketMs: bucketMs)
        let top = lines.flatMap { $0.values.map(\.value) }.max() ?? 0
        let scale = max(top, 1)
        peak = format(top)
        middle = format(top / 2)
        let windowMs = window.milliseconds
        start = window.label(now - windowMs)
        halfway = window.label(now - windowMs / 2)
        self.lines = lines.map { name, style, values in
            var points = values.map { at, value in
                let x = Self.width * Double(max(0, windowMs - (now - at))) / Double(windowMs)
                let y = Self.height - 2 - (Self.height - 4) * value / scale
                return "\(Int(x.rounded())),\(Int(y.rounded()))"
            }
            // A lone point is a line of no length: its round caps draw it as a dot.
            if points.count == 1 { points.append(points[0]) }
            return Line(name: name, style: style, points: points.joined(separator: " "))
        }
        hasLegend = lines.count > 1
    }
}
