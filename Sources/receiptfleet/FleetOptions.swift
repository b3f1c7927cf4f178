import AppStore
import ArgumentParser
import Fleet
import Foundation
import JobQueue
import Ledger

/// The options every fleet command shares. Each setting comes from, strongest first: its flag,
/// the environment variable RECEIPTFLEET_<NAME>, the JSON configuration file (`--config`, or
/// RECEIPTFLEET_CONFIG), then the default. The shared secret never comes from a flag (flags show
/// in `ps`): set RECEIPTFLEET_SHARED_SECRET, or name a file with `shared-secret-file`; nor do the
/// webhook secret keys (RECEIPTFLEET_WEBHOOK_SECRET_KEY, RECEIPTFLEET_WEBHOOK_SECRET_PREVIOUS_KEYS).
struct FleetOptions: ParsableArguments {
    @Option(help: "A JSON file of settings (keys as the flags' names, e.g. \"rate-limit\": 50).")
    var config: String?

    @Option(help: "Redis, e.g. redis://:password@host:6379/0 or unix:///run/redis.sock.")
    var redisURL: String?

    @Option(help: "PostgreSQL, a URL or conninfo, e.g. postgresql://fleet@db/receiptfleet.")
    var postgresURL: String?

    @Option(help: "The Redis key prefix of this deployment; it must hold a {hash tag}.")
    var keyPrefix: String?

    @Option(help: "verifyReceipt in production (default: Apple's).")
    var appstoreProductionURL: String?

    @Option(help: "verifyReceipt in the sandbox (default: Apple's).")
    var appstoreSandboxURL: String?

    @Option(help: "A PEM file of the CAs that verify verifyReceipt's certificate instead of the system's (a test App Store or a TLS proxy).")
    var appleCAFile: String?

    @Option(help: "Seconds every call to Apple may fail in the TLS handshake or HTTP framing (usually passing) before the fleet halts.")
    var haltAfterTransportFailures: Int?

    @Option(help: "Requests per second to Apple, summed over the whole fleet.")
    var rateLimit: Double?

    @Option(help: "How many requests may go at once after a quiet spell (default: 1% of the rate, at least 1).")
    var rateBurst: Int?

    @Option(help: "Worker threads in this process, each with its own connections.")
    var concurrency: Int?

    @Option(help: "Seconds a stopping worker may take to finish the jobs in hand.")
    var drainGrace: Int?

    @Option(help: "Seconds a reserved job may go without an ack before others take it over.")
    var visibilityTimeout: Int?

    @Option(help: "Webhook dispatcher threads in a relay process: the most webhook requests it has in flight.")
    var webhookThreads: Int?

    @Option(help: "The most webhook requests in flight to one endpoint, fleet-wide; below --webhook-threads.")
    var webhookEndpointConcurrency: Int?

    @Flag(help: "Let webhooks reach loopback, private and link-local addresses over plain http (development and tests only).")
    var allowPrivateWebhooks = false

    @Option(help: "A proxy for webhook deliveries, e.g. http://egress.internal:3128 (proxy variables in the environment are ignored for webhooks).")
    var webhookProxy: String?

    @Option(help: "Seconds a Redis command may wait for the server (blocking commands: on top of their wait).")
    var redisTimeout: Double?

    @Option(help: "Seconds a PostgreSQL statement may wait for the server.")
    var postgresTimeout: Double?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    @Option(help: "Where worker, relay and schedule --every serve /metrics, /healthz and /readyz: HOST:PORT (port 0 picks a free one), or off.")
    var metricsAddress: String?

    /// Every setting, resolved and checked.
    func settings() throws -> FleetSettings {
        try ResolvedConfiguration(options: self).settings()
    }
}

/// The layers of configuration, looked up key by key ("rate-limit" → --rate-limit,
/// RECEIPTFLEET_RATE_LIMIT, "rate-limit" in the file).
struct ResolvedConfiguration {
    private let flags: [String: String]
    private let environment: [String: String]
    private let file: [String: String]

    /// `commandFlags`: the settings of the command's own flags (e.g. `serve --address`), by key.
    init(
        options: FleetOptions, commandFlags: [String: String?] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        self.environment = environment
        var flags = commandFlags.compactMapValues { $0 }
        flags["redis-url"] = options.redisURL
        flags["postgres-url"] = options.postgresURL
        flags["key-prefix"] = options.keyPrefix
        flags["appstore-production-url"] = options.appstoreProductionURL
        flags["appstore-sandbox-url"] = options.appstoreSandboxURL
        flags["apple-ca-file"] = options.appleCAFile
        flags["halt-after-transport-failures"] = options.haltAfterTransportFailures.map(String.init)
        flags["rate-limit"] = options.rateLimit.map { String($0) }
        flags["rate-burst"] = options.rateBurst.map(String.init)
        flags["concurrency"] = options.concurrency.map(String.init)
        flags["drain-grace"] = options.drainGrace.map(String.init)
        flags["visibility-timeout"] = options.visibilityTimeout.map(String.init)
        flags["webhook-threads"] = options.webhookThreads.map(String.init)
        flags["webhook-endpoint-concurrency"] = options.webhookEndpointConcurrency.map(String.init)
        flags["allow-private-webhooks"] = options.allowPrivateWebhooks ? "true" : nil
        flags["webhook-proxy"] = options.webhookProxy
        flags["redis-timeout"] = options.redisTimeout.map { String($0) }
        flags["postgres-timeout"] = options.postgresTimeout.map { String($0) }
        flags["log-level"] = options.logLevel
        flags["metrics-address"] = options.metricsAddress
        self.flags = flags
        file = try Self.readFile(options.config ?? environment["RECEIPTFLEET_CONFIG"])
    }

    /// The value of `key`, and where it came from (for `config check`).
    func value(_ key: String) -> (value: String, source: String)? {
        if let value = flags[key] { return (value, "flag --\(key)") }
        let variable = "RECEIPTFLEET_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
        if let value = environment[variable], !value.isEmpty { return (value, "environment \(variable)") }
        if let value = file[key] { return (value, "file") }
        return nil
    }

    func string(_ key: String, default fallback: String) -> String { value(key)?.value ?? fallback }

    func number<T: LosslessStringConvertible>(_ key: String, default fallback: T, _ valid: (T) -> Bool, _ rule: String) throws -> T {
        guard let (text, source) = value(key) else { return fallback }
        guard let number = T(text), valid(number) else {
            throw ConfigurationError(key: key, source: source, reason: "'\(text)' is not \(rule)")
        }
        return number
    }

    /// A server's call deadline: 10 s unless set.
    func callTimeout(_ key: String) throws -> Duration {
        .milliseconds(Int64(1000 * (try number(key, default: 10.0, { $0 >= 0.1 && $0 <= 3_600 }, "a number of seconds from 0.1 to 3600"))))
    }

    func metricsAddress() throws -> MetricsAddress? {
        guard let (text, source) = value("metrics-address") else { return .standard }
        do {
            return try MetricsAddress.parse(text)
        } catch {
            throw ConfigurationError(key: "metrics-address", source: source, reason: error.description)
        }
    }

    /// The shared secret, and the one it replaces while both are configured: `shared-secret` (or the
    /// file) holds one, or two during a rotation, the new one first (comma- or line-separated).
    func sharedSecrets() throws -> (current: SharedSecret?, previous: SharedSecret?) {
        let key: String, text: String, source: String
        if let (value, from) = value("shared-secret") {
            (key, text, source) = ("shared-secret", value, from)
        } else if let (path, from) = value("shared-secret-file") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(key: "shared-secret-file", source: from, reason: "cannot read \(path)")
            }
            (key, text, source) = ("shared-secret-file", String(decoding: data, as: UTF8.self), from)
        } else {
            return (nil, nil)
        }
        let secrets: [String]
        do {
            secrets = try Self.sharedSecrets(in: text)
        } catch {
            throw ConfigurationError(key: key, source: source, reason: error.reason)
        }
        return (SharedSecret(secrets[0]), secrets.count == 2 ? SharedSecret(secrets[1]) : nil)
    }

    func settings() throws -> FleetSettings {
        let rate = try number("rate-limit", default: 50.0, { $0 > 0 && $0 <= 100_000 }, "a rate between 0 and 100000 per second")
        let burst = try number("rate-burst", default: RateLimit.defaultBurst(perSecond: rate), { $0 >= 1 }, "a whole number ≥ 1")
        let prefix = string("key-prefix", default: "{rf}")
        let (webhookThreads, webhookEndpointConcurrency) = try webhookConcurrency()
        let secrets = try sharedSecrets()
        do {
            _ = try QueueKeys(prefix: prefix)
        } catch {
            throw ConfigurationError(key: "key-prefix", source: value("key-prefix")?.source ?? "default", reason: "\(error)")
        }
        var settings = FleetSettings(
            redisURL: string("redis-url", default: "redis://127.0.0.1:6379/0"),
            postgresURL: string("postgres-url", default: "postgresql://localhost/receiptfleet"),
            keyPrefix: prefix,
            endpoints: AppStoreEndpoints(
                production: string("appstore-production-url", default: AppStoreEndpoints.apple.production),
                sandbox: string("appstore-sandbox-url", default: AppStoreEndpoints.apple.sandbox)),
            sharedSecret: secrets.current,
            rateLimit: try RateLimit(perSecond: rate, burst: burst),
            retryPolicy: try RetryPolicy(
                base: .milliseconds(Int64(1000 * (try number("retry-base", default: 30.0, { $0 > 0 }, "a number of seconds > 0")))),
                cap: .milliseconds(Int64(1000 * (try number("retry-cap", default: 3_600.0, { $0 > 0 }, "a number of seconds > 0")))),
                maxAttempts: try number("retry-max-attempts", default: 8, { $0 >= 1 }, "a whole number ≥ 1")),
            concurrency: try number("concurrency", default: 8, { (1...512).contains($0) }, "a whole number from 1 to 512"),
            visibilityTimeout: .seconds(try number("visibility-timeout", default: 60, { $0 >= 5 }, "a whole number of seconds ≥ 5")),
            drainGrace: .seconds(try number("drain-grace", default: 25, { $0 >= 0 }, "a whole number of seconds ≥ 0")),
            redisTimeout: try callTimeout("redis-timeout"),
            postgresTimeout: try callTimeout("postgres-timeout"),
            nightlyHourUTC: try number("nightly-hour", default: 2, { (0...23).contains($0) }, "an hour from 0 to 23"),
            checkSchedule: CheckSchedule(
                refundedOrInvalidInterval: 3_600 * (try number(
                    "refunded-recheck-hours", default: 24.0, { $0 > 0 }, "a number of hours > 0")),
                refundedOrInvalidWatchPeriod: 86_400 * (try number(
                    "refunded-recheck-days", default: 30.0, { $0 >= 0 }, "a number of days ≥ 0 (0: never)"))),
            initialPurchaseWindow: 3_600 * (try number(
                "initial-purchase-hours", default: 24.0, { $0 >= 0 }, "a number of hours ≥ 0 (0: never announce)")),
            // Comma-separated: products sold as non-renewing subscriptions (one-time purchases with an expiry).
            nonRenewingProductIDs: Set(string("non-renewing-products", default: "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }),
            metricsAddress: try metricsAddress(),
            webhookThreads: webhookThreads,
            webhookEndpointConcurrency: webhookEndpointConcurrency)
        settings.haltAfterConfigurationErrors = try number(
            "halt-after-config-errors", default: 3, { (1...100).contains($0) }, "a whole number from 1 to 100")
        try applyWebhookSettings(to: &settings)
        try applyServerAPISettings(to: &settings)
        settings.relayPostgresURL = value("relay-postgres-url")?.value
        settings.eventsStreamRetention = .seconds(86_400 * (try number(
            "events-stream-retention-days", default: 7.0, { $0 > 0 && $0 <= 3_650 }, "a number of days from 0 to 3650")))
        settings.retention = try retention(streamRetention: settings.eventsStreamRetention)
        settings.previousSharedSecret = secrets.previous
        settings.apps = try apps()
        // A failing fleet calls Apple once per pause (every 3 s), and the streak forgets itself after
        // this long without a failure: shorter than a few pauses, it would never halt.
        settings.haltAfterTransportFailures = .seconds(try number(
            "halt-after-transport-failures", default: 600, { (30...86_400).contains($0) }, "a whole number of seconds from 30 to 86400"))
        settings.appleCAFile = try appleCAFile()
        return settings
    }

    /// The `retention-*-days` settings; 0 keeps for ever. Events stay in the ledger at least as long
    /// as in the stream, so that a replay reaches everything a consumer could have missed.
    private func retention(streamRetention: Duration) throws -> RetentionPolicy {
        func days(_ key: String, default value: Double, atLeast minimum: Double = 1) throws -> Duration? {
            let days = try number(key, default: value, { $0 == 0 || ($0 >= minimum && $0 <= 36_500) },
                                  "0 (keep for ever) or a number of days from \(Int(minimum.rounded(.up))) to 36500")
            return days == 0 ? nil : .days(days)
        }
        let streamDays = Double(streamRetention.components.seconds) / 86_400
        return RetentionPolicy(
            verifications: try days("retention-verifications-days", default: 90),
            events: try days("retention-events-days", default: max(400, streamDays), atLeast: streamDays),
            webhookLogs: try days("retention-webhook-logs-days", default: 30),
            expiredReceipts: try days("retention-expired-receipts-days", default: 400))
    }

    /// The CA file for verifyReceipt, read now so a wrong path fails here rather than halting the fleet.
    private func appleCAFile() throws -> String? {
        guard let (path, source) = value("apple-ca-file") else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationError(key: "apple-ca-file", source: source, reason: "cannot read \(path)")
        }
        return path
    }

    /// The dispatcher threads and the cap per endpoint, which must leave threads for other endpoints.
    private func webhookConcurrency() throws -> (threads: Int, perEndpoint: Int) {
        let threads = try number("webhook-threads", default: 8, { (2...256).contains($0) }, "a whole number from 2 to 256")
        let perEndpoint = try number(
            "webhook-endpoint-concurrency", default: 2, { (1..<threads).contains($0) },
            "a whole number from 1 to webhook-threads − 1 (\(threads - 1)): one endpoint that stops answering "
                + "would otherwise hold every webhook thread")
        return (threads, perEndpoint)
    }

    private static func readFile(_ path: String?) throws -> [String: String] {
        guard let path else { return [:] }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: "config", source: path, reason: "cannot read the file")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError(key: "config", source: path, reason: "not a JSON object of settings")
        }
        return object.mapValues { "\($0)" }
    }
}

struct ConfigurationError: Error, CustomStringConvertible {
    let key: String
    let source: String
    let reason: String

    var description: String { "configuration '\(key)' (from \(source)): \(reason)" }
}
