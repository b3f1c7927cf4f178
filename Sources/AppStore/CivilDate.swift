import Foundation

/// Proleptic Gregorian calendar arithmetic in plain integers (Howard Hinnant's days-from-civil
/// algorithms), so dates are converted the same way on every machine, with no formatter state.
enum CivilDate {
    /// Days since 1970-01-01 of a valid date; nil for dates such as February 30.
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64? {
        // Years are bounded so that no arithmetic here or in callers can overflow.
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        // Days past the end of the month roll into the next one; reject them.
        return from(daysSince1970: days) == (year, month, day) ? days : nil
    }

    static func from(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Seconds since 1970 of a valid UTC date and time; nil when any part is out of range.
    static func secondsSince1970(
        year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64
    ) -> Int64? {
        guard (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second),
              let days = daysSince1970(year: year, month: month, day: day)
        else { return nil }
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }
}

extension Instant {
    /// Reads Apple's formatted dates, `"2017-03-11 01:22:23 Etc/GMT"`: a wall-clock time followed
    /// by an IANA time zone name (always `Etc/GMT` in the fields this package reads).
    init?(appleFormatted text: String) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3 else { return nil }
        let date = parts[0].split(separator: "-"), time = parts[1].split(separator: ":")
        let fields = (date + time).compactMap { Int64($0) }
        guard date.count == 3, time.count == 3, fields.count == 6,
              let wallClock = CivilDate.secondsSince1970(
                  year: fields[0], month: fields[1], day: fields[2],
                  hour: fields[3], minute: fields[4], second: fields[5]),
              let zone = TimeZone(identifier: String(parts[2]))
        else { return nil }
        // The zone's offset at the wall-clock time read as UTC, corrected once: exact except
        // within an hour of a daylight-saving change, which GMT never has.
        let guess = wallClock - Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wallClock))))
        let utc = wallClock - Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(guess))))
        self.init(millisecondsSince1970: utc * 1000)
    }
}
