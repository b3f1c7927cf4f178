import AppStore
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
    /// and the fleet's settings in it. A command that only the App Store Server API can do says what
    /// it does there (`serverAPIFor`), for the error without a key.
    func setUp(
        _ group: (any SettingFlags)? = nil, unset: Logger.Level = .info, serverAPIFor what: String? = nil
    ) throws -> (Logger, ResolvedConfiguration, FleetSettings) {
        let resolved = try group.map { try ResolvedConfiguration(flags: self, $0) } ?? ResolvedConfiguration(flags: self)
        let logger = ProcessLogging.bootstrap(level: try resolved.isSet(Settings.logLevel) ? resolved[Settings.logLevel] : unset)
        let settings = try FleetSettings(resolved)
        if let what, settings.serverAPI == nil {
            throw ValidationError("\(what) through the App Store Server API: configure its key "
                                  + "(server-api-key-file, server-api-key-id, server-api-issuer-id; docs/appstore-server-api.md).")
        }
        return (logger, resolved, settings)
    }
}

extension AppCatalog {
    /// The app --app names, checked against apps-file, or the only one; nil when there are several and none is named.
    func named(_ app: String?) throws -> String? {
        do { return try resolve(app) } catch { throw ValidationError("\(error)") }
    }

    /// As `named`, for what is each app's own (`owned`): with several apps, --app must name one.
    func owner(_ app: String?, of owned: String) throws -> String {
        guard let owner = try named(app) else {
            throw ValidationError("\(owned) are each app's own: name the app with --app (\(names.joined(separator: ", "))).")
        }
        return owner
    }
}
