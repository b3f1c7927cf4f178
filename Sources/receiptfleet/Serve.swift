import AccessTokens
import APIService
import AppStore
import ArgumentParser
import Fleet
import Foundation
import Observability
import ProcessRoot

/// `receiptfleet serve`
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the HTTP API: register receipts, read subscription state, take App Store notifications.",
        discussion: """
            POST /v1/receipts verifies a new purchase with Apple at once (under the fleet's rate limit, \
            pause and halt) and answers its entitlement; GET /v1/subscriptions/{id} and GET \
            /v1/subscriptions?original_transaction_id=…|account_id=… read state; POST \
            /v1/notifications/apple takes App Store Server Notifications V1 and V2 and queues a \
            high-priority verification for the workers. See docs/api.md and docs/openapi.yaml.

            Every endpoint but the notifications needs 'Authorization: Bearer TOKEN'. Tokens come from \
            RECEIPTFLEET_API_TOKENS or the file named by api-tokens-file (never a flag, which `ps` would \
            show): NAME:TOKEN entries separated by commas or lines. V2 notifications are checked against \
            Apple Root CA - G3, built in (its fingerprint checked), and must be for the app's bundle id \
            (--apple-bundle-id, required for V2); --apple-root-certificate names another root (a test CA).

            With operator tokens (RECEIPTFLEET_CONSOLE_TOKENS or console-tokens-file, never API tokens) it \
            also serves the ops console under /console (see `receiptfleet console --help`).

            Its metrics (receiptfleet_api_* and the fleet-wide gauges), /healthz and /readyz are on \
            --metrics-address, as for every long-running command. Stops on SIGTERM/SIGINT after the \
            requests in flight.

            Examples:
              RECEIPTFLEET_API_TOKENS=backend:$(cat /run/secrets/api-token) receiptfleet serve
              receiptfleet serve --address 0.0.0.0:8080 --apple-bundle-id com.example.app
              receiptfleet serve --notification-environments Production,Sandbox --config /etc/receiptfleet.json
            """)

    @OptionGroup var options: FleetOptions
    @OptionGroup var api: APIOptions

    func run() async throws {
        let logger = setUpLogging(level: options.logLevel)
        let resolved = try ResolvedConfiguration(options: options, commandFlags: api.flags)
        let fleet = try resolved.settings()
        let settings = try resolved.apiSettings()
        // An operator's own root (a test CA) is named, so that it is never trusted unnoticed.
        let rootSource = resolved.value("apple-root-certificate").map { "\($0.0) (from \($0.1))" }
            ?? "built in, SHA-256 \(AppleRootCertificate.fingerprint)"
        for root in settings.trustedRoots {
            logger.notice("V2 notifications must chain to this root", metadata: ["root": "\(root.subject)", "source": "\(rootSource)"])
        }
        if fleet.apps.bundleIDs.isEmpty {
            logger.warning("no apple-bundle-id (or apps-file) is configured: V2 notifications are refused with 503 until one is")
        }
        if fleet.sharedSecret == nil {
            logger.warning("no shared secret is configured: Apple refuses registrations and V1 notifications cannot be checked")
        }
        let metrics = ProcessMetrics()
        let console = try resolved.consoleSettings()
        if console == nil {
            logger.notice("the ops console is off: set RECEIPTFLEET_CONSOLE_TOKENS (or console-tokens-file) to serve it under /console")
        }
        let server = try APIServer(settings: settings, fleet: fleet, console: console, logger: logger, metrics: metrics.factory) { port in
            if console != nil { logger.info("console listening", metadata: ["url": "http://\(settings.host):\(port)/console"]) }
            logger.info("API listening", metadata: [
                "address": "http://\(settings.host):\(port)", "clients": "\(settings.tokens.names.joined(separator: ","))",
                "notification-environments": "\(settings.notificationEnvironments.map(\.rawValue).sorted().joined(separator: ","))",
            ])
        }
        try await ProcessRoot.run(
            ProcessRoot.services(for: .api(server), settings: fleet, metrics: metrics, logger: logger), logger: logger)
        logger.info("API stopped")
    }
}

/// `serve`'s own settings; like every setting they also come from RECEIPTFLEET_<NAME> or the file.
struct APIOptions: ParsableArguments {
    @Option(help: "HOST:PORT to listen on (port 0 picks a free one). Default 127.0.0.1:8080.")
    var address: String?

    @Option(help: "Environments whose notifications are processed (others are acknowledged and ignored): Production, Sandbox.")
    var notificationEnvironments: String?

    @Option(help: "A root certificate (PEM or DER) to trust for V2 notifications instead of the built-in Apple Root CA - G3 (for a test CA).")
    var appleRootCertificate: String?

    @Option(help: "The app's bundle ids (comma-separated), when no apps-file names the apps: V2 notifications for any other app are refused.")
    var appleBundleID: String?

    @Option(help: "The app's Apple id (appAppleId), checked in V2 notifications when set (without apps-file).")
    var appleAppID: Int64?

    @Option(help: "The largest request body accepted, in bytes. Default 1048576.")
    var maxBodyBytes: Int?

    @Option(help: "Requests per second per client (API token, or address without one). Default 20.")
    var clientRateLimit: Double?

    @Option(help: "Requests a client may send at once after a quiet spell. Default 40.")
    var clientRateBurst: Int?

    @Option(help: "Threads with their own Redis, PostgreSQL and Apple connections serving requests. Default 4.")
    var lanes: Int?

    @Option(help: "Proxies (CIDR,…) whose Forwarded / X-Forwarded-For name the caller's address, e.g. 10.0.0.0/8,127.0.0.1. Default none.")
    var trustedProxies: String?

    var flags: [String: String?] {
        [
            "address": address, "notification-environments": notificationEnvironments,
            "apple-root-certificate": appleRootCertificate, "apple-bundle-id": appleBundleID,
            "apple-app-id": appleAppID.map(String.init), "max-body-bytes": maxBodyBytes.map(String.init),
            "client-rate-limit": clientRateLimit.map { String($0) }, "client-rate-burst": clientRateBurst.map(String.init),
            "lanes": lanes.map(String.init), "trusted-proxies": trustedProxies,
        ]
    }
}

extension ResolvedConfiguration {
    func apiSettings() throws -> APISettings {
        func source(_ key: String) -> String { value(key)?.source ?? "default" }
        let (host, port) = try listenAddress(default: "127.0.0.1:8080")
        var environments = Set<AppStoreEnvironment>()
        for name in string("notification-environments", default: "Production").split(separator: ",") {
            guard let environment = AppStoreEnvironment(rawValue: name.trimmingCharacters(in: .whitespaces).capitalized) else {
                throw ConfigurationError(key: "notification-environments", source: source("notification-environments"),
                                         reason: "'\(name)' is neither Production nor Sandbox")
            }
            environments.insert(environment)
        }
        return APISettings(
            host: host, port: port,
            tokens: try apiTokens(), notificationEnvironments: environments,
            trustedRoots: try trustedRoots(),
            maxBodyBytes: try number("max-body-bytes", default: 1 << 20, { (1_024...(64 << 20)).contains($0) }, "a size from 1024 to 67108864 bytes"),
            clientRateLimit: try number("client-rate-limit", default: 20.0, { $0 > 0 && $0 <= 100_000 }, "a rate between 0 and 100000 per second"),
            clientRateBurst: try number("client-rate-burst", default: 40, { $0 >= 1 }, "a whole number ≥ 1"),
            notificationRateLimit: try number(
                "notification-rate-limit", default: 100.0, { $0 > 0 && $0 <= 100_000 }, "a rate between 0 and 100000 per second"),
            notificationRateBurst: try number("notification-rate-burst", default: 200, { $0 >= 1 }, "a whole number ≥ 1"),
            trustedProxies: try value("trusted-proxies").map { text, source in
                do { return try TrustedProxies(parsing: text) } catch {
                    throw ConfigurationError(key: "trusted-proxies", source: source, reason: "\(error)")
                }
            } ?? .none,
            lanes: try number("lanes", default: 4, { (1...256).contains($0) }, "a whole number from 1 to 256"))
    }

    /// Like the shared secret: from RECEIPTFLEET_API_TOKENS (or the file's `api-tokens`), or the
    /// file named by `api-tokens-file`; never a flag.
    private func apiTokens() throws -> NamedTokens {
        guard let tokens = try namedTokens("api-tokens", kind: "API tokens") else {
            throw ConfigurationError(key: "api-tokens", source: "default", reason:
                "serve needs API tokens: set RECEIPTFLEET_API_TOKENS=NAME:TOKEN[,NAME:TOKEN…] or name a file with api-tokens-file")
        }
        return tokens
    }

    /// NAME:TOKEN entries from `key` (RECEIPTFLEET_KEY, or the file's) or from the file named by
    /// `key-file`; never a flag, which `ps` would show. nil when neither is set.
    func namedTokens(_ key: String, kind: String) throws -> NamedTokens? {
        let (text, setting): (String, (key: String, source: String))
        if let (value, source) = value(key) {
            (text, setting) = (value, (key, source))
        } else if let (path, source) = value(key + "-file") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(key: key + "-file", source: source, reason: "cannot read \(path)")
            }
            (text, setting) = (String(decoding: data, as: UTF8.self), (key + "-file", source))
        } else {
            return nil
        }
        do {
            return try NamedTokens(parsing: text, kind: kind)
        } catch {
            throw ConfigurationError(key: setting.key, source: setting.source, reason: error.message)
        }
    }
}
