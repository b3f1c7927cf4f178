import Foundation

/// Reads a `Retry-After` header: a number of seconds, or an HTTP date in any of the three forms
/// HTTP/1.1 requires recipients to accept (RFC 9110 §5.6.7).
enum RetryAfter {
    /// How long after `now` the receiver asks us to wait; nil for a value that is neither form.
    /// A date in the past asks for no wait.
    static func delay(_ value: String, now: Date) -> Duration? {
        let value = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(value), seconds >= 0 { return .seconds(seconds) }
        guard let date = httpDate(value) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSince(now) * 1_000)))
    }

    /// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT")
    /// and asctime ("Sun Nov  6 08:49:37 1994", read with its runs of spaces folded).
    private static func httpDate(_ value: String) -> Date? {
        let folded = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: folded) { return date }
        }
        return nil
    }
}
