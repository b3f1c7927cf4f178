/// A line chart with its axes: each line a polyline in the templates' 600 × 120 box, oldest at the
/// left, the whole window wide whatever the samples cover; the value axis from 0 to the peak, the
/// time axis from the window's start to now; a legend when there is more than one line.
struct Chart {
    struct Line {
        var name: String
        /// The stroke's CSS class (`s-…` in the style sheet).
        var style: String
        var points: String
    }

    var label: String
    var lines: [Line]
    var hasLegend: Bool
    var peak: String
    var middle: String
    var start: String
    var halfway: String
    var end = "now"

    static let width = 600.0, height = 120.0

    /// `lines` hold (ms since the epoch, value) points; the window ends at `now` (ms).
    init(label: String, lines: [(name: String, style: String, values: History.Points)], now: Int64, window: ChartWindow,
         format: (Double) -> String) {
        self.label = label
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
