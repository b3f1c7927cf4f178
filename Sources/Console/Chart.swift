/// A line chart's points in the templates' 600 × 120 box, oldest at the left, the whole window
/// wide whatever the samples cover; mustache draws it as an SVG polyline.
struct Chart {
    var label: String
    var points: String
    var peak: String

    static let width = 600.0, height = 120.0

    /// `values` are (ms since the epoch, value); `window` ends at `now` (ms).
    init(label: String, values: [(at: Int64, value: Double)], now: Int64, windowMs: Int64, format: (Double) -> String) {
        self.label = label
        let top = max(values.map(\.value).max() ?? 0, 1)
        peak = format(values.map(\.value).max() ?? 0)
        points = values.map { at, value in
            let x = Self.width * Double(max(0, windowMs - (now - at))) / Double(windowMs)
            let y = Self.height - 2 - (Self.height - 4) * value / top
            return "\(Int(x.rounded())),\(Int(y.rounded()))"
        }.joined(separator: " ")
    }
}
