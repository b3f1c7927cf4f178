import Foundation
import JobQueue

// The rules of the settings every fleet command reads.
extension Rule where Value == String {
    public static var keyPrefix: Rule { .checked("a Redis key prefix holding a {hash tag}") { _ = try QueueKeys(prefix: $0) } }
}

extension Rule where Value == Duration {
    /// A server's call deadline.
    public static var callTimeout: Rule { .seconds("a number of seconds from 0.1 to 3600") { $0 >= 0.1 && $0 <= 3_600 } }
}

extension Rule where Value == MetricsAddress? {
    public static var metricsAddress: Rule {
        Rule.converting("HOST:PORT, [IPv6]:PORT or off") { text, _ in try MetricsAddress.parse(text) }
        .showing { $0.map { "\($0) (/metrics, /healthz, /readyz)" } ?? "off" }.writing { $0.map(\.description) ?? "off" }
    }
}

extension Rule where Value == Double {
    /// 0 (keep for ever) or a number of days from the minimum (1, or another setting's) to 36500.
    public static func retentionDays(atLeast name: String? = nil, _ minimum: @escaping @Sendable (ResolvedConfiguration) throws -> Double = { _ in 1 }) -> Rule {
        Rule("0 (keep for ever) or a number of days from \(name ?? "1") to 36500") { text, configuration in
            let minimum = try minimum(configuration)
            guard let days = Double(text), days == 0 || (days >= minimum && days <= 36_500) else {
                throw InvalidValue("'\(text)' is not 0 (keep for ever) or a number of days from \(Int(minimum.rounded(.up))) to 36500")
            }
            return days
        }
    }
}

extension Rule where Value == Int {
    /// Below webhook-threads, so that one endpoint cannot hold every thread.
    public static var endpointConcurrency: Rule {
        Rule("a whole number from 1 to webhook-threads − 1") { text, configuration in
            let threads = try configuration[Settings.webhookThreads]
            guard let number = Int(text), (1..<threads).contains(number) else {
                throw InvalidValue("'\(text)' is not a whole number from 1 to webhook-threads − 1 (\(threads - 1)): one endpoint that stops "
                    + "answering would otherwise hold every webhook thread")
            }
            return number
        }
    }
}

