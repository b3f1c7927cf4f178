import AccessTokens
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import RedisClient

/// What `config check` says of a configuration: every value and where it came from, then, when it
/// is valid, the risks it runs and what it leaves out (a newcomer's first file should not read as
/// complete when workers would halt at once). `worker` warns of the queue's own risks too.
public enum ConfigurationReview {
    /// Each setting in a row, its value (a secret masked) and where it came from, told to `row` as
    /// it is read; under apps-file, when it is set, each of its apps.
    public static func rows(_ settings: FleetSettings, _ resolved: ResolvedConfiguration, row: (String) -> Void) throws {
        func show(_ key: String, _ value: String) { row(key.padding(toLength: max(30, key.count + 1), withPad: " ", startingAt: 0) + value) }
        for setting in Settings.all {
            show(setting.key, try setting.shown(in: resolved) + "   (\(resolved.source(of: setting)))")
            if setting.key == Settings.appsFile.key, resolved.isSet(setting) {
                for app in settings.apps.apps { show("  app \(app.name)", app.shown) }
            }
        }
    }

    /// The risks `settings` run, `config check`'s warnings. Blocking: it asks Redis too.
    public static func warnings(_ settings: FleetSettings, _ resolved: ResolvedConfiguration) throws -> [String] {
        var warnings = [settings.visibilityTimeoutWarning, try insecureCookieWarning(resolved)].compactMap(\.self)
        if let unscoped = try resolved[Settings.apiTokens]?.unscopedNames, !unscoped.isEmpty {
            warnings.append("the API tokens of \(unscoped.joined(separator: ", ")) name no scopes, so they may do everything "
                            + "(\(APIScope.names.sorted().joined(separator: ", "))): write NAME(read):TOKEN to give a client only what it needs")
        }
        do {
            warnings += try redisDurabilityWarnings(settings)
        } catch {
            warnings.append("Redis could not be reached to check its persistence (\(error))")
        }
        return warnings
    }

    /// Ways the configured Redis could lose the queue (`RedisDurability`). Blocking: call it off
    /// Swift's cooperative pool.
    public static func redisDurabilityWarnings(_ settings: FleetSettings) throws -> [String] {
        RedisDurability.warnings(on: try RedisConnection(settings.redisConfiguration()))
    }

    /// What a valid configuration does not give, and which part of the fleet that stops.
    public static func leftOut(_ settings: FleetSettings, _ resolved: ResolvedConfiguration) throws -> [String] {
        var missing: [String] = []
        let secretless = settings.apps.apps.filter { settings.sharedSecrets(forApp: $0.name).isEmpty }.map(\.name)
        if settings.defaultBackend == .verifyReceipt, !secretless.isEmpty {
            missing.append("a shared secret for \(secretless.joined(separator: ", ")): Apple answers 21004 for auto-renewable "
                           + "receipts without one, and the workers halt (set shared-secret, or shared_secret_file in the apps file)")
        }
        if settings.defaultBackend == .serverAPI, settings.serverAPI == nil {
            missing.append("the App Store Server API's key (server-api-issuer-id, server-api-key-id, server-api-key-file): "
                           + "the backend is server-api, and its subscriptions halt without it")
        }
        if try resolved[Settings.apiTokens] == nil {
            missing.append("API tokens: `serve` refuses to start (set RECEIPTFLEET_API_TOKENS or api-tokens-file)")
        }
        if try resolved[Settings.consoleTokens] == nil {
            missing.append("console tokens: there is no ops console (set RECEIPTFLEET_CONSOLE_TOKENS or console-tokens-file)")
        }
        return missing
    }

    /// Behind trusted proxies the console is most likely reached over TLS, where a session cookie
    /// that is not marked Secure could still be sent over plain http.
    private static func insecureCookieWarning(_ resolved: ResolvedConfiguration) throws -> String? {
        guard try resolved[Settings.trustedProxies] != nil, try resolved[Settings.consoleTokens] != nil,
              try !resolved[Settings.consoleSecureCookies]
        else { return nil }
        return "trusted-proxies is set, so the console is probably reached through a TLS proxy, but console-secure-cookies "
            + "is not: set console-secure-cookies=true so the session cookie never goes over plain http"
    }
}
