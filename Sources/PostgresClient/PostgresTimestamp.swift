import Foundation

/// `timestamptz` in PostgreSQL's ISO text form (`2024-05-01 12:30:00.123456+00`), to the microsecond,
/// which is the server's own precision.
enum PostgresTimestamp {
    /// The text to send: UTC, six fractional digits.
    static func text(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (seconds, fraction) = floorDivision(micros, 1_000_000)
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d.%06d+00", parts.tm_year + 1900, parts.tm_mon + 1,
            parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, Int32(fraction))
    }

    /// Reads the server's output; nil for anything else (`infinity`, BC dates).
    static func date(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.number(), scanner.skip("-"), let month = scanner.number(digits: 2),
            scanner.skip("-"), let day = scanner.number(digits: 2), scanner.skip(" "),
            let hour = scanner.number(digits: 2), scanner.skip(":"), let minute = scanner.number(digits: 2),
            scanner.skip(":"), let second = scanner.number(digits: 2)
        else { return nil }

        var micros: Int64 = 0
        if scanner.skip(".") {
            let start = scanner.position
            guard let digits = scanner.number(), scanner.position - start <= 6 else { return nil }
            micros = Int64(digits)
            for _ in (scanner.position - start)..<6 { micros *= 10 }  // ".5" is 500000 µs
        }

        // The session runs in UTC, so the offset is +00, but any offset is read correctly.
        guard let sign = scanner.sign(), let offsetHours = scanner.number(digits: 2) else { return nil }
        let offsetMinutes = scanner.skip(":") ? scanner.number(digits: 2) : 0
        let offsetSeconds = scanner.skip(":") ? scanner.number(digits: 2) : 0
        guard let offsetMinutes, let offsetSeconds, scanner.isAtEnd else { return nil }

        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let offset = sign * (offsetHours * 3600 + offsetMinutes * 60 + offsetSeconds)
        let seconds = Int64(timegm(&parts)) - Int64(offset)
        // One division of two exact integers gives the Date nearest the true instant.
        return Date(timeIntervalSince1970: Double(seconds * 1_000_000 + micros) / 1_000_000)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }
}

/// Reads ASCII digits and separators from the front of a byte string.
private struct Scanner {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { position == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
        position += 1
        return true
    }

    /// +1 or -1 for a leading sign.
    mutating func sign() -> Int? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }

    /// A run of digits: exactly `digits` of them, or any number (at most 9) when nil.
    mutating func number(digits: Int? = nil) -> Int? {
        let start = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]),
            position - start < (digits ?? 9)
        {
            position += 1
        }
        guard position > start, digits == nil || position - start == digits else { return nil }
        return bytes[start..<position].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }
}
