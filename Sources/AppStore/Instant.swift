import Foundation

/// A moment in whole milliseconds since 1970-01-01T00:00:00Z: Apple's own precision.
///
/// The domain uses `Instant` rather than `Date` so that values compare exactly after a round trip
/// through storage (a `Date` is a binary fraction of seconds), and so that its JSON spelling is
/// fixed — an ISO 8601 string such as `"2017-03-11T01:22:23.000Z"` — whatever date strategy the
/// encoder was given.
public struct Instant: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let millisecondsSince1970: Int64

    /// The instants this type represents: years 1970 through 9999. Anything outside is not a date
    /// Apple sends, so readers treat it as missing.
    public static let supportedRange: ClosedRange<Int64> = 0...253_402_300_799_999

    /// Fails when `millisecondsSince1970` is outside `supportedRange`.
    public init?(millisecondsSince1970: Int64) {
        guard Self.supportedRange.contains(millisecondsSince1970) else { return nil }
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// `date` rounded down to the millisecond and clamped into `supportedRange`.
    public init(_ date: Date) {
        let millis = (date.timeIntervalSince1970 * 1000).rounded(.down)
        let lowest = Double(Self.supportedRange.lowerBound), highest = Double(Self.supportedRange.upperBound)
        millisecondsSince1970 = millis.isNaN ? 0 : Int64(min(max(millis, lowest), highest))
    }

    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    public static func < (lhs: Instant, rhs: Instant) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    /// ISO 8601 in UTC with milliseconds, e.g. `2017-03-11T01:22:23.000Z`.
    public var description: String {
        let (days, millisOfDay) = millisecondsSince1970.quotientAndRemainder(dividingBy: 86_400_000)
        let (year, month, day) = CivilDate.from(daysSince1970: days)
        let seconds = millisOfDay / 1000
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
            + "\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2)):\(pad(seconds % 60, 2))"
            + ".\(pad(millisOfDay % 1000, 3))Z"
    }

    /// Parses the spelling `description` writes, or the same without milliseconds
    /// ("2026-11-23T09:00:00Z", as people type it).
    public init?(iso8601 text: String) {
        let bytes = Array(text.utf8)
        let pattern = Array((bytes.count == 20 ? "dddd-dd-ddTdd:dd:ddZ" : "dddd-dd-ddTdd:dd:dd.dddZ").utf8)
        guard bytes.count == pattern.count,
              zip(bytes, pattern).allSatisfy({ $1 == UInt8(ascii: "d") ? $0.isDigit : $0 == $1 })
        else { return nil }
        let number = { (range: Range<Int>) in bytes[range].reduce(Int64(0)) { $0 * 10 + Int64($1 - 48) } }
        guard let seconds = CivilDate.secondsSince1970(
            year: number(0..<4), month: number(5..<7), day: number(8..<10),
            hour: number(11..<13), minute: number(14..<16), second: number(17..<19))
        else { return nil }
        self.init(millisecondsSince1970: seconds * 1000 + (bytes.count == 20 ? 0 : number(20..<23)))
    }
}

extension Instant: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let instant = Instant(iso8601: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected a UTC time such as 2017-03-11T01:22:23.000Z")
        }
        self = instant
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

extension UInt8 {
    var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
}
