import ArgumentParser
import Fleet
import Foundation

/// `receiptfleet config check`
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with the fleet's configuration.",
        subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the resolved configuration, secrets masked, and fail on anything invalid.",
            discussion: """
                Each setting comes from, strongest first: its flag, RECEIPTFLEET_<NAME> in the \
                environment, the JSON file given by --config (or RECEIPTFLEET_CONFIG), the default. \
                An invalid value fails with the key, where it came from, and why.

                Examples:
                  receiptfleet config check
                  receiptfleet config check --config /etc/receiptfleet.json --rate-limit 20
                """)

        @OptionGroup var options: FleetOptions

        func run() throws {
            let settings = try options.settings()
            let resolved = try ResolvedConfiguration(options: options)
            func row(_ key: String, _ value: String) {
                let source = resolved.value(key)?.source ?? "default"
                print(key.padding(toLength: 26, withPad: " ", startingAt: 0) + value + "   (\(source))")
            }
            row("redis-url", masked(settings.redisURL))
            row("postgres-url", masked(settings.postgresURL))
            row("key-prefix", settings.keyPrefix)
            row("appstore-production-url", settings.endpoints.production)
            row("appstore-sandbox-url", settings.endpoints.sandbox)
            print("shared-secret".padding(toLength: 26, withPad: " ", startingAt: 0)
                + (settings.sharedSecret == nil ? "not set (Apple answers 21004 for auto-renewable receipts)" : "set (masked)"))
            row("rate-limit", "\(settings.rateLimit.perSecond)/s")
            row("rate-burst", "\(settings.rateLimit.burst)")
            row("concurrency", "\(settings.concurrency)")
            row("visibility-timeout", "\(settings.visibilityTimeout)")
            row("drain-grace", "\(settings.drainGrace)")
            row("retry-base", "\(settings.retryPolicy.base)")
            row("retry-cap", "\(settings.retryPolicy.cap)")
            row("retry-max-attempts", "\(settings.retryPolicy.maxAttempts)")
            row("nightly-hour", "\(settings.nightlyHourUTC):00 UTC")
            row("metrics-address", settings.metricsAddress.map { "\($0) (/metrics, /healthz, /readyz)" } ?? "off")
            print("The configuration is valid.")
        }

        /// A URL with its password replaced by ***.
        private func masked(_ url: String) -> String {
            guard let at = url.lastIndex(of: "@"), let scheme = url.range(of: "://") else {
                return url.replacingOccurrences(of: #"password=\S+"#, with: "password=***", options: .regularExpression)
            }
            let credentials = url[scheme.upperBound..<at]
            guard let colon = credentials.firstIndex(of: ":") else { return url }
            return String(url[..<colon]) + ":***" + String(url[at...])
        }
    }
}
