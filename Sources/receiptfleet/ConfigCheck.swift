import APIService
import AccessTokens
import ArgumentParser
import Fleet
import FleetConfiguration
import Foundation

/// `receiptfleet config check`, `receiptfleet config reference`
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Work with the fleet's configuration.",
        subcommands: [Check.self, Reference.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the resolved configuration, secrets masked, and fail on anything invalid.",
            discussion: """
                Each setting comes from, strongest first: its flag, RECEIPTFLEET_<NAME> in the \
                environment, the JSON file given by --config (or RECEIPTFLEET_CONFIG), the default. \
                An invalid value fails with the key, where it came from, and why. `config reference` \
                lists every setting.

                Examples:
                  receiptfleet config check
                  receiptfleet config check --config /etc/receiptfleet.json --rate-limit 20
                  receiptfleet config check --address 0.0.0.0:8080
                """)

        @OptionGroup var options: FleetOptions
        @OptionGroup var api: APIOptions

        func run() throws {
            let settings = try options.settings()
            let resolved = try ResolvedConfiguration(options: options, api)
            func row(_ key: String, _ value: String) { print(key.padding(toLength: max(30, key.count + 1), withPad: " ", startingAt: 0) + value) }
            for setting in Settings.all {
                row(setting.key, try setting.shown(in: resolved) + "   (\(resolved.source(of: setting)))")
                if setting.key == Settings.appsFile.key, resolved.isSet(setting) {
                    for app in settings.apps.apps {
                        let secret = switch app.sharedSecrets.count {
                        case 0: "the account's shared secret"
                        case 1: "its own shared secret (masked)"
                        default: "its own shared secret (masked); rotating: the previous one is accepted too"
                        }
                        row("  app \(app.name)", app.bundleIDs.sorted().joined(separator: ",") + "; " + secret + (app.appleID.map { "; Apple id \($0)" } ?? "")
                            + (app.refundPreference.map { "; refund preference \($0.argument)" } ?? ""))
                    }
                }
            }
            if let warning = settings.visibilityTimeoutWarning { print("warning: \(warning)") }
            if let warning = try Self.insecureCookieWarning(resolved) { print("warning: \(warning)") }
            if let unscoped = try resolved[Settings.apiTokens]?.unscopedNames, !unscoped.isEmpty {
                print("warning: the API tokens of \(unscoped.joined(separator: ", ")) name no scopes, so they may do everything "
                      + "(\(APIScope.names.sorted().joined(separator: ", "))): write NAME(read):TOKEN to give a client only what it needs")
            }
            do {
                for warning in try redisDurabilityWarnings(settings) { print("warning: \(warning)") }
            } catch {
                print("warning: Redis could not be reached to check its persistence (\(error))")
            }
            let missing = try Self.leftOut(settings, resolved)
            print(missing.isEmpty ? "The configuration is valid."
                  : "The configuration is valid, but it leaves out:\n" + missing.map { "  - \($0)" }.joined(separator: "\n"))
        }

        /// What a valid configuration does not give, and which part of the fleet that stops: a
        /// newcomer's first file should not read as complete when workers would halt at once.
        static func leftOut(_ settings: FleetSettings, _ resolved: ResolvedConfiguration) throws -> [String] {
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
        static func insecureCookieWarning(_ resolved: ResolvedConfiguration) throws -> String? {
            guard try resolved[Settings.trustedProxies] != nil, try resolved[Settings.consoleTokens] != nil,
                  try !resolved[Settings.consoleSecureCookies]
            else { return nil }
            return "trusted-proxies is set, so the console is probably reached through a TLS proxy, but console-secure-cookies "
                + "is not: set console-secure-cookies=true so the session cookie never goes over plain http"
        }
    }

    struct Reference: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every setting: its flag, default, what it accepts and what it means.",
            discussion: """
                Each setting is also RECEIPTFLEET_<NAME> in the environment and "name" in the --config file. \
                The Markdown is docs/operations.md's table; a test fails when they differ.
                """)

        @Flag(help: "JSON instead of Markdown: one object per setting.") var json = false

        func run() throws {
            print(json ? try Settings.referenceJSON() : Settings.referenceMarkdown())
        }
    }
}
