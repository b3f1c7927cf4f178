import AppStore
import ArgumentParser
import Foundation

/// `--environment Production` (or Sandbox, whatever the case): anything else is refused with the choices.
extension AppStoreEnvironment: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument.capitalized) }
}

/// A time given as ISO 8601 (2026-11-23T09:00:00Z).
extension Instant: ExpressibleByArgument {
    public init?(argument: String) { self.init(iso8601: argument) }
}

/// A `--since` (or `--until`) argument: a day (2026-11-24, from its midnight UTC), a time
/// (2026-11-24T02:00:00Z), or how long ago (90m, 72h, 7d).
public func sinceArgument(_ text: String, flag: String = "--since", now: Date) throws -> Date {
    if let time = try? Date(text, strategy: .iso8601) { return time }
    if let day = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return day }
    let units: [Character: Double] = ["m": 60, "h": 3_600, "d": 86_400]
    if let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count >= 0 {
        return now.addingTimeInterval(-count * unit)
    }
    throw ValidationError("\(flag) '\(text)' is neither a day (2026-11-24), a time (2026-11-24T02:00:00Z) nor a time ago (90m, 72h, 7d).")
}
