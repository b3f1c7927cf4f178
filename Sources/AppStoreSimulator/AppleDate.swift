/// Apple's date spellings, written straight into bytes: `2017-03-11 01:22:23 Etc/GMT` and
/// `2017-03-10 17:22:23 America/Los_Angeles`.
///
/// Pacific time follows the United States rule in force since 2007 (daylight time from the second
/// Sunday in March, 02:00 local, to the first Sunday in November, 02:00 local); the simulator's
/// clock never needs older dates, and this keeps formatting free of time-zone database lookups.
enum AppleDate {
    static func appendGMT(_ milliseconds: Int64, to bytes: inout [UInt8]) {
        appendCivil(seconds: milliseconds.floorDiv(1000), to: &bytes)
        append(" Etc/GMT", to: &bytes)
    }

    static func appendPacific(_ milliseconds: Int64, to bytes: inout [UInt8]) {
        let seconds = milliseconds.floorDiv(1000)
        appendCivil(seconds: seconds + pacificOffset(utcSeconds: seconds), to: &bytes)
        append(" America/Los_Angeles", to: &bytes)
    }

    /// Seconds to add to UTC for Pacific time at that instant: -7 h in daylight time, else -8 h.
    static func pacificOffset(utcSeconds: Int64) -> Int64 {
        let year = civil(days: utcSeconds.floorDiv(86_400)).year
        let dstStart = nthSunday(2, month: 3, year: year) * 86_400 + 10 * 3600  // 02:00 PST
        let dstEnd = nthSunday(1, month: 11, year: year) * 86_400 + 9 * 3600  // 02:00 PDT
        return (dstStart..<dstEnd).contains(utcSeconds) ? -7 * 3600 : -8 * 3600
    }

    /// Days since 1970 of the `n`th Sunday of a month.
    private static func nthSunday(_ n: Int64, month: Int64, year: Int64) -> Int64 {
        let first = days(year: year, month: month, day: 1)
        let weekday = (first + 4).floorMod(7)  // 0 is Sunday; 1970-01-01 was a Thursday
        return first + (7 - weekday) % 7 + 7 * (n - 1)
    }

    /// Proleptic Gregorian calendar conversions (Howard Hinnant's algorithms).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `yyyy-MM-dd HH:mm:ss`
    private static func appendCivil(seconds: Int64, to bytes: inout [UInt8]) {
        let date = civil(days: seconds.floorDiv(86_400))
        let secondOfDay = seconds.floorMod(86_400)
        appendDigits(UInt64(max(0, date.year)), minimumWidth: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(UInt64(date.month), minimumWidth: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(UInt64(date.day), minimumWidth: 2, to: &bytes)
        bytes.append(UInt8(ascii: " "))
        appendDigits(UInt64(secondOfDay / 3600), minimumWidth: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(UInt64(secondOfDay / 60 % 60), minimumWidth: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(UInt64(secondOfDay % 60), minimumWidth: 2, to: &bytes)
    }

    /// Decimal digits of `value`, left-padded with zeros to `minimumWidth`.
    static func appendDigits(_ value: UInt64, minimumWidth: Int, to bytes: inout [UInt8]) {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var position = buffer.count
            var rest = value
            repeat {
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0 || buffer.count - position < minimumWidth
            bytes.append(contentsOf: buffer[position...])
        }
    }

    private static func append(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
}

extension Int64 {
    /// Division rounding towards minus infinity, so times before 1970 still format.
    func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    func floorMod(_ divisor: Int64) -> Int64 {
        self - floorDiv(divisor) * divisor
    }
}
