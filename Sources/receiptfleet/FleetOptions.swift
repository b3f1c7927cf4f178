import ArgumentParser
import FleetConfiguration
import FleetFlags
import Logging
import Observability

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
        try FleetSettings(ResolvedConfiguration(flags: self))
    }
}

/// The flags of the fleet's HTTP servers, in `serve`'s and `console`'s groups: where one listens,
/// and which proxies before it name its callers.
struct ListenOptions: SettingFlags {
    static let commands: Commands = [.serve, .console]

    @Option(Settings.address) var address: String?
    @Option(Settings.trustedProxies) var trustedProxies: String?
    @Option(Settings.trustedProxyHeader) var trustedProxyHeader: String?
}

extension FleetOptions {
    /// What a command that logs starts from: its logger, at the log-level setting's level (`unset`
    /// where the command has a default of its own), the configuration with its own flags (`group`),
    /// and the fleet's settings in it.
    func setUp(_ group: (any SettingFlags)? = nil, unset: Logger.Level = .info) throws -> (Logger, ResolvedConfiguration, FleetSettings) {
        let resolved = try group.map { try ResolvedConfiguration(flags: self, $0) } ?? ResolvedConfiguration(flags: self)
        let logger = ProcessLogging.bootstrap(level: try resolved.isSet(Settings.logLevel) ? resolved[Settings.logLevel] : unset)
        return (logger, resolved, try FleetSettings(resolved))
    }
}
