import AppStore
import ArgumentParser
import Fleet
import Foundation
import JobQueue
import Ledger
import Logging

/// The flags every fleet command shares, one per flag setting of `SettingsRegistry` (its name and
/// help come from there). Each setting comes from, strongest first: its flag, the environment
/// variable RECEIPTFLEET_<NAME>, the JSON configuration file (`--config`, or RECEIPTFLEET_CONFIG),
/// then the default. Secrets are never flags (flags show in `ps`): `config reference` lists them all.
struct FleetOptions: SettingFlags {
    static let commands = Commands.fleet

    @Option(Settings.config) var config: String?
    @Option(Settings.redisURL) var redisURL: String?
    @Option(Settings.postgresURL) var postgresURL: String?
    @Option(Settings.keyPrefix) var keyPrefix: String?
    @Option(Settings.redisTimeout) var redisTimeout: String?
    @Option(Settings.postgresTimeout) var postgresTimeout: String?
    @Option(Settings.logLevel) var logLevel: String?
    @Option(Settings.metricsAddress) var metricsAddress: String?
    @Option(Settings.appstoreProductionURL) var appstoreProductionURL: String?
    @Option(Settings.appstoreSandboxURL) var appstoreSandboxURL: String?
    @Option(Settings.appleCAFile) var appleCAFile: String?
    @Option(Settings.appleBundleID) var appleBundleID: String?
    @Option(Settings.appleAppID) var appleAppID: String?
    @Option(Settings.appleRootCertificate) var appleRootCertificate: String?
    @Option(Settings.rateLimit) var rateLimit: String?
    @Option(Settings.rateBurst) var rateBurst: String?
    @Option(Settings.concurrency) var concurrency: String?
    @Option(Settings.jobsPerBatch) var jobsPerBatch: String?
    @Option(Settings.visibilityTimeout) var visibilityTimeout: String?
    @Option(Settings.drainGrace) var drainGrace: String?
    @Option(Settings.haltAfterTransportFailures) var haltAfterTransportFailures: String?
    @Option(Settings.webhookThreads) var webhookThreads: String?
    @Option(Settings.webhookEndpointConcurrency) var webhookEndpointConcurrency: String?
    @Flag(Settings.allowPrivateWebhooks) var allowPrivateWebhooks = false
    @Option(Settings.webhookProxy) var webhookProxy: String?

    /// Every setting, resolved and checked.
    func settings() throws -> FleetSettings {
        try ResolvedConfiguration(options: self).settings()
    }
}

/// The layers of configuration, looked up setting by setting (rate-limit: --rate-limit,
/// RECEIPTFLEET_RATE_LIMIT, "rate-limit" in the file, the default).
struct ResolvedConfiguration {
    /// Whose defaults apply where they differ (`address`).
    let command: Commands
    private let flags: [String: String]
    private let environment: [String: String]
    private var file: [String: String] = [:]

    /// `groups`: the command's own setting flags (serve's APIOptions, console's ConsoleOptions).
    init(options: FleetOptions, _ groups: any SettingFlags..., environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.environment = environment
        flags = groups.reduce(options.givenFlags) { $0.merging($1.givenFlags) { $1 } }
        command = groups.last.map { type(of: $0).commands } ?? .fleet
        file = try Self.readFile(try self[Settings.config])
    }

    /// The value of `key` as given, and where it came from; nil when it is not given.
    func value(_ key: String) -> (value: String, source: String)? {
        if let value = flags[key] { return (value, "flag --\(key)") }
        let variable = "RECEIPTFLEET_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
        if let value = environment[variable], !value.isEmpty { return (value, "environment \(variable)") }
        if Settings.named[key]?.inFile != false, let value = file[key] { return (value, "file") }
        return nil
    }

    /// The setting's value, checked: as given, else its default.
    subscript<Value>(setting: Setting<Value>) -> Value {
        get throws {
            guard let (text, key, source) = try given(setting) else { return try setting.fallback(self) }
            do {
                return try setting.rule.parse(text, self)
            } catch let refusal as Refusal {
                throw ConfigurationError(key: key, source: source, reason: refusal.reason)
            }
        }
    }

    func isSet(_ setting: any AnySetting) -> Bool { source(of: setting) != "default" }

    /// Where the setting came from: "flag --KEY", "environment RECEIPTFLEET_KEY", "file" or "default".
    func source(of setting: any AnySetting) -> String {
        value(setting.key)?.source ?? (setting.orFile ? value(setting.key + "-file")?.source : nil) ?? "default"
    }

    /// The text given for the setting, under KEY or (read from the file it names) KEY-file.
    private func given(_ setting: any AnySetting) throws -> (text: String, key: String, source: String)? {
        if let (text, source) = value(setting.key) { return (text, setting.key, source) }
        guard setting.orFile, let (path, source) = value(setting.key + "-file") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: setting.key + "-file", source: source, reason: "cannot read \(path)")
        }
        return (String(decoding: data, as: UTF8.self), setting.key + "-file", source)
    }

    func settings() throws -> FleetSettings {
        let secrets = try self[Settings.sharedSecret] ?? []
        var settings = try FleetSettings(
            redisURL: self[Settings.redisURL],
            postgresURL: self[Settings.postgresURL],
            keyPrefix: self[Settings.keyPrefix],
            endpoints: AppStoreEndpoints(production: self[Settings.appstoreProductionURL], sandbox: self[Settings.appstoreSandboxURL]),
            sharedSecret: secrets.first.map(SharedSecret.init),
            rateLimit: RateLimit(perSecond: self[Settings.rateLimit], burst: self[Settings.rateBurst]),
            retryPolicy: RetryPolicy(base: self[Settings.retryBase], cap: self[Settings.retryCap], maxAttempts: self[Settings.retryMaxAttempts]),
            concurrency: self[Settings.concurrency],
            jobsPerBatch: self[Settings.jobsPerBatch],
            visibilityTimeout: self[Settings.visibilityTimeout],
            drainGrace: self[Settings.drainGrace],
            redisTimeout: self[Settings.redisTimeout],
            postgresTimeout: self[Settings.postgresTimeout],
            nightlyHourUTC: self[Settings.nightlyHour],
            checkSchedule: CheckSchedule(
                refundedOrInvalidInterval: 3_600 * self[Settings.refundedRecheckHours],
                refundedOrInvalidWatchPeriod: 86_400 * self[Settings.refundedRecheckDays]),
            initialPurchaseWindow: 3_600 * self[Settings.initialPurchaseHours],
            nonRenewingProductIDs: Set(self[Settings.nonRenewingProducts]),
            metricsAddress: self[Settings.metricsAddress],
            webhookThreads: self[Settings.webhookThreads],
            webhookEndpointConcurrency: self[Settings.webhookEndpointConcurrency])
        settings.haltAfterConfigurationErrors = try self[Settings.haltAfterConfigErrors]
        try applyWebhookSettings(to: &settings)
        try applyServerAPISettings(to: &settings)
        settings.relayPostgresURL = try self[Settings.relayPostgresURL]
        settings.eventsStreamRetention = try Duration.seconds(86_400 * self[Settings.eventsStreamRetentionDays])
        settings.retention = try RetentionPolicy(
            verifications: Self.days(self[Settings.retentionVerificationsDays]),
            events: Self.days(self[Settings.retentionEventsDays]),
            webhookLogs: Self.days(self[Settings.retentionWebhookLogsDays]),
            expiredReceipts: Self.days(self[Settings.retentionExpiredReceiptsDays]))
        settings.previousSharedSecret = secrets.count == 2 ? SharedSecret(secrets[1]) : nil
        settings.apps = try self[Settings.appsFile]
            ?? .single(
                bundleIDs: Set(self[Settings.appleBundleID]), appleID: self[Settings.appleAppID],
                refundPreference: self[Settings.refundPreference])
        settings.haltAfterTransportFailures = try self[Settings.haltAfterTransportFailures]
        settings.appleCAFile = try self[Settings.appleCAFile]
        return settings
    }

    /// A `retention-*-days` setting; 0 keeps for ever.
    private static func days(_ days: Double) -> Duration? { days == 0 ? nil : .days(days) }

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

// The fleet's own rules (the serve and console ones are with them, in Serve.swift and ConsoleCommand.swift).
extension Rule where Value == String {
    static var keyPrefix: Rule { .checked("a Redis key prefix holding a {hash tag}") { _ = try QueueKeys(prefix: $0) } }
}

extension Rule where Value == Duration {
    /// A server's call deadline.
    static var callTimeout: Rule { .seconds("a number of seconds from 0.1 to 3600") { $0 >= 0.1 && $0 <= 3_600 } }
}

extension Rule where Value == MetricsAddress? {
    static var metricsAddress: Rule {
        Rule.converting("HOST:PORT, [IPv6]:PORT or off") { text, _ in try MetricsAddress.parse(text) }
        .showing { $0.map { "\($0) (/metrics, /healthz, /readyz)" } ?? "off" }.writing { $0.map(\.description) ?? "off" }
    }
}

extension Rule where Value == Double {
    /// 0 (keep for ever) or a number of days from the minimum (1, or another setting's) to 36500.
    static func retentionDays(atLeast name: String? = nil, _ minimum: @escaping @Sendable (ResolvedConfiguration) throws -> Double = { _ in 1 }) -> Rule {
        Rule("0 (keep for ever) or a number of days from \(name ?? "1") to 36500") { text, configuration in
            let minimum = try minimum(configuration)
            guard let days = Double(text), days == 0 || (days >= minimum && days <= 36_500) else {
                throw Refusal("'\(text)' is not 0 (keep for ever) or a number of days from \(Int(minimum.rounded(.up))) to 36500")
            }
            return days
        }
    }
}

extension Rule where Value == Int {
    /// Below webhook-threads, so that one endpoint cannot hold every thread.
    static var endpointConcurrency: Rule {
        Rule("a whole number from 1 to webhook-threads − 1") { text, configuration in
            let threads = try configuration[Settings.webhookThreads]
            guard let number = Int(text), (1..<threads).contains(number) else {
                throw Refusal("'\(text)' is not a whole number from 1 to webhook-threads − 1 (\(threads - 1)): one endpoint that stops "
                    + "answering would otherwise hold every webhook thread")
            }
            return number
        }
    }
}

/// Logs at the log-level setting's level; `unset` where the command has a default of its own.
func setUpLogging(_ options: FleetOptions, unset: Logger.Level = .info) throws -> Logger {
    let configuration = try ResolvedConfiguration(options: options)
    let level = try configuration.isSet(Settings.logLevel) ? configuration[Settings.logLevel] : unset
    return setUpLogging(level: level.rawValue)
}
