import APIService
import AppStore
import ArgumentParser
import Fleet
import Foundation
import Redaction

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
                  receiptfleet config check --address 0.0.0.0:8080     (serve's settings are checked when api tokens are set)
                """)

        @OptionGroup var options: FleetOptions
        @OptionGroup var api: APIOptions

        func run() throws {
            let settings = try options.settings()
            let resolved = try ResolvedConfiguration(options: options, commandFlags: api.flags)
            func row(_ key: String, _ value: String) {
                let source = resolved.value(key)?.source ?? "default"
                print(key.padding(toLength: 30, withPad: " ", startingAt: 0) + value + "   (\(source))")
            }
            row("redis-url", Redact.connectionString(settings.redisURL))
            row("postgres-url", Redact.connectionString(settings.postgresURL))
            row("relay-postgres-url", settings.relayPostgresURL.map(Redact.connectionString) ?? "postgres-url (the relay's LISTEN needs a direct session: set this behind PgBouncer)")
            row("key-prefix", settings.keyPrefix)
            row("appstore-production-url", Redact.url(settings.endpoints.production))
            row("appstore-sandbox-url", Redact.url(settings.endpoints.sandbox))
            print("shared-secret".padding(toLength: 30, withPad: " ", startingAt: 0)
                + (settings.sharedSecret == nil ? "not set (Apple answers 21004 for auto-renewable receipts)"
                    : settings.previousSharedSecret == nil ? "set (masked)"
                    : "set (masked); rotating: the previous secret is accepted too, until you remove it"))
            if resolved.value("apps-file") == nil {
                let app = settings.apps.apps[0]
                row("apps-file", "not set: one app, `default`")
                row("apple-bundle-id", app.bundleIDs.isEmpty ? "not set (any receipt is the app's; V2 notifications are refused)"
                    : app.bundleIDs.sorted().joined(separator: ","))
                row("apple-app-id", app.appleID.map(String.init) ?? "not set (not checked)")
            } else {
                row("apps-file", "\(settings.apps.apps.count) apps")
                for app in settings.apps.apps {
                    let secret = switch app.sharedSecrets.count {
                    case 0: "the account's shared secret"
                    case 1: "its own shared secret (masked)"
                    default: "its own shared secret (masked); rotating: the previous one is accepted too"
                    }
                    print("  app \(app.name)".padding(toLength: 30, withPad: " ", startingAt: 0)
                        + app.bundleIDs.sorted().joined(separator: ",") + "; " + secret
                        + (app.appleID.map { "; Apple id \($0)" } ?? ""))
                }
            }
            row("backend", "\(settings.defaultBackend) (for subscriptions that name none)")
            if let serverAPI = settings.serverAPI {
                row("server-api-key-file", "key id \(serverAPI.key.keyID), issuer \(serverAPI.key.issuerID), app \(serverAPI.key.bundleID) (key masked)")
                row("server-api-production-url", Redact.url(serverAPI.endpoints.production))
                row("server-api-sandbox-url", Redact.url(serverAPI.endpoints.sandbox))
                row("server-api-rate-limit", "\((serverAPI.rateLimit ?? settings.rateLimit).perSecond)/s for each endpoint (Apple limits each alone)")
            } else {
                row("server-api-key-file", "not set (subscriptions on the server-api backend halt the Server API)")
            }
            // Apple's signatures (the Server API's answers, V2 notifications) chain to it.
            row("apple-root-certificate", try resolved.value("apple-root-certificate").map { path, _ in
                "\(try resolved.trustedRoots().count) certificate(s) from \(path) instead of Apple's root (tests and demos only)"
            } ?? "Apple Root CA - G3, built in (SHA-256 \(AppleRootCertificate.fingerprint))")
            row("rate-limit", "\(settings.rateLimit.perSecond)/s")
            row("rate-burst", "\(settings.rateLimit.burst)")
            row("concurrency", "\(settings.concurrency)")
            row("visibility-timeout", "\(settings.visibilityTimeout)")
            row("drain-grace", "\(settings.drainGrace)")
            row("redis-timeout", "\(settings.redisTimeout)")
            row("postgres-timeout", "\(settings.postgresTimeout)")
            row("retry-base", "\(settings.retryPolicy.base)")
            row("retry-cap", "\(settings.retryPolicy.cap)")
            row("retry-max-attempts", "\(settings.retryPolicy.maxAttempts)")
            row("nightly-hour", "\(settings.nightlyHourUTC):00 UTC")
            row("halt-after-config-errors", "\(settings.haltAfterConfigurationErrors) subscriptions in a row")
            row("halt-after-transport-failures",
                "\(settings.haltAfterTransportFailures.components.seconds) s of calls all failing in the TLS handshake or HTTP framing")
            row("apple-ca-file", settings.appleCAFile ?? "none (the system's CAs verify Apple)")
            row("refunded-recheck-hours", "\(settings.checkSchedule.refundedOrInvalidInterval / 3_600)")
            row("refunded-recheck-days", "\(settings.checkSchedule.refundedOrInvalidWatchPeriod / 86_400)")
            row("initial-purchase-hours", "\(settings.initialPurchaseWindow / 3_600)")
            row("non-renewing-products", settings.nonRenewingProductIDs.isEmpty
                ? "none" : settings.nonRenewingProductIDs.sorted().joined(separator: ","))
            row("webhook-threads", "\(settings.webhookThreads)")
            func kept(_ age: Duration?) -> String { age.map { "\(Double($0.components.seconds) / 86_400)" } ?? "0 (kept for ever)" }
            row("events-stream-retention-days", kept(settings.eventsStreamRetention) + " (the ledger keeps events longer)")
            row("retention-verifications-days", kept(settings.retention.verifications))
            row("retention-events-days", kept(settings.retention.events) + " (published events; `webhooks replay` reaches this far)")
            row("retention-webhook-logs-days", kept(settings.retention.webhookLogs))
            row("retention-expired-receipts-days", kept(settings.retention.expiredReceipts) + " (after expiry or refund)")
            row("webhook-endpoint-concurrency", "\(settings.webhookEndpointConcurrency) in flight per endpoint")
            row("allow-private-webhooks", settings.allowPrivateWebhooks
                ? "yes: webhooks may reach loopback and private addresses over plain http (development only)"
                : "no (https to public addresses only)")
            row("webhook-proxy", settings.webhookProxy.map(Redact.url) ?? "none (direct; proxy variables are ignored for webhooks)")
            row("webhook-secret-key", settings.webhookSecretKeys.map { "set (masked): \($0)" }
                ?? "not set (webhooks add refuses; encrypted secrets cannot sign)")
            row("metrics-address", settings.metricsAddress.map { "\($0) (/metrics, /healthz, /readyz)" } ?? "off")
            if resolved.value("api-tokens") == nil, resolved.value("api-tokens-file") == nil {
                print("api-tokens".padding(toLength: 30, withPad: " ", startingAt: 0) + "not set (needed by `serve` only)")
            } else {
                let serve = try resolved.apiSettings()
                row("address", "\(serve.host):\(serve.port)")
                print("api-tokens".padding(toLength: 30, withPad: " ", startingAt: 0)
                    + "\(serve.tokens.names.count) set (masked): \(serve.tokens.names.joined(separator: ", "))"
                    + (serve.tokens.rotating.isEmpty ? "" : "; rotating (old and new both accepted): \(serve.tokens.rotating.joined(separator: ", "))"))
                row("notification-environments", serve.notificationEnvironments.map(\.rawValue).sorted().joined(separator: ","))
                row("max-body-bytes", "\(serve.maxBodyBytes)")
                row("client-rate-limit", "\(serve.clientRateLimit)/s")
                row("client-rate-burst", "\(serve.clientRateBurst)")
                row("lanes", "\(serve.lanes)")
                row("notification-rate-limit", "\(serve.notificationRateLimit)/s, burst \(serve.notificationRateBurst)")
                row("trusted-proxies", resolved.value("trusted-proxies")?.0 ?? "none (the peer's address is the caller's)")
            }
            if let console = try resolved.consoleSettings() {
                print("console-tokens".padding(toLength: 30, withPad: " ", startingAt: 0)
                    + "\(console.operators.names.count) set (masked): \(console.operators.names.joined(separator: ", "))"
                    + (console.operators.rotating.isEmpty ? "" : "; rotating: \(console.operators.rotating.joined(separator: ", "))"))
                row("console-secure-cookies", console.secureCookies ? "yes (the session cookie goes over TLS only)" : "no (set it behind TLS)")
            } else {
                print("console-tokens".padding(toLength: 30, withPad: " ", startingAt: 0) + "not set (no ops console)")
            }
            if let warning = settings.visibilityTimeoutWarning { print("warning: \(warning)") }
            do {
                for warning in try redisDurabilityWarnings(settings) { print("warning: \(warning)") }
            } catch {
                print("warning: Redis could not be reached to check its persistence (\(error))")
            }
            print("The configuration is valid.")
        }
    }
}
