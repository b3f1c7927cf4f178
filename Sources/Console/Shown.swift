import AppStore
import Foundation

/// How the console writes numbers, times and durations: the same way on every page.
enum Shown {
    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    /// A count with thousands grouped: "1,659".
    static func count(_ value: Int) -> String {
        value.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
    }

    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<120: "\(Int(seconds)) s"
        case ..<7_200: "\(Int(seconds / 60)) min"
        default: String(format: "%.1f h", seconds / 3_600)
        }
    }

    /// A timing, down to the millisecond: "84 ms", "1.2 s", "45 s", "3 min", "2.5 h".
    static func timing(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: "\(Int((seconds * 1_000).rounded())) ms"
        case ..<10: String(format: "%.1f s", seconds)
        default: duration(seconds)
        }
    }

    /// "2026-11-24 02:00:00 UTC".
    static func time(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d UTC", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
    }

    static func time(_ instant: Instant) -> String { time(instant.date) }
}
