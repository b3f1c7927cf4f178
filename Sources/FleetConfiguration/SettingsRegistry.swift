import AccessTokens
import AppStore
import AppStoreClients
import EventRelay
import Foundation
import JobQueue
import Logging

/// Every setting of the fleet, each declared once, in the order `config check` and the docs list
/// them. A new setting is a line here, its use where it is read (and, for a flag, a property in
/// its option group: `@Option(Settings.rateLimit) var rateLimit: String?`); `config check`, the
/// environment variable, the docs' table (`receiptfleet config reference`) and the flag's name
/// and help come from this declaration.
public struct SettingsRegistry: Sendable {
    public let config = Setting<String?>(
        "config", .path, unset: "none", .flag, inFile: false,
        help: "A JSON file of settings, keys as the flags' names (\"rate-limit\": 50).",
        details: "From --config or RECEIPTFLEET_CONFIG only; each setting's flag and variable come before the file.")

    // Servers.
    public let redisURL = Setting<String>(
        "redis-url", .connection, default: "redis://127.0.0.1:6379/0", .flag,
        help: "Redis, e.g. redis://:password@host:6379/0 or unix:///run/redis.sock?password=….",
        details: "No rediss://: \"TLS to Redis\".")
    public let postgresURL = Setting<String>(
        "postgres-url", .connection, default: "postgresql://localhost/receiptfleet", .flag,
        help: "PostgreSQL, a URL or conninfo, e.g. postgresql://fleet@db/receiptfleet.",
        details: "sslmode passes through: \"TLS to PostgreSQL\".")
    public let relayPostgresURL = Setting<String?>(
        "relay-postgres-url", .connection, unset: "postgres-url (the relay's LISTEN needs a direct session: set this behind PgBouncer)",
        help: "A direct PostgreSQL session for the outbox relay's LISTEN, when postgres-url goes through PgBouncer in transaction mode.",
        details: "See \"PostgreSQL connections and PgBouncer\".")
    public let keyPrefix = Setting<String>("key-prefix", .keyPrefix, default: "{rf}", .flag, help: "The Redis key prefix of this deployment; it must hold a {hash tag}.")
    public let redisTimeout = Setting<Duration>(
        "redis-timeout", .callTimeout, default: .seconds(10), .flag,
        help: "Seconds a Redis command may wait for the server (blocking commands: on top of their wait).",
        details: "Then it fails naming the server, and the connection is made again on the next call. A stopped or frozen "
            + "server still acknowledges packets, so only this notices it (docs/reliability.md).")
    public let shiftedClock = Setting<Bool>(
        "shifted-clock", .boolean, default: false,
        help: "Drills and benchmarks only: read the time as Redis's clock plus the shift in {prefix}:time-shift (µs).",
        details: "A harness moves the shift forward while the fleet is idle, so that every process (the scheduler, the workers, "
            + "serve, the relay) stands on a later day together; leases, limits and pauses run at the real pace.",
        show: { $0 ? "yes: the time is Redis's plus {prefix}:time-shift (drills and benchmarks only)" : "no (Redis's clock)" })
    public let postgresTimeout = Setting<Duration>(
        "postgres-timeout", .callTimeout, default: .seconds(10), .flag,
        help: "Seconds a PostgreSQL statement may wait for the server.", details: "As redis-timeout.")

    // The process.
    public let logLevel = Setting<Logger.Level>(
        "log-level",
        Rule("trace, debug, info, notice, warning, error or critical", read: { Logger.Level(rawValue: $0.lowercased()) })
            .offering(Logger.Level.allCases.map(\.rawValue)),
        default: .info, .flag, help: "How much the process logs.", details: "`verify` logs warnings only, unless this is set.")
    public let metricsAddress = Setting<MetricsAddress?>(
        "metrics-address", .metricsAddress, default: .standard, .flag,
        help: "Where every long-running command serves /metrics, /healthz and /readyz: HOST:PORT (port 0 picks a free one), or off.",
        details: "[IPv6]:PORT too; one port per process on a host.")

    // Apple.
    public let appstoreProductionURL = Setting<String>(
        "appstore-production-url", .url, default: AppStoreEndpoints.apple.production, .flag, help: "verifyReceipt in production.")
    public let appstoreSandboxURL = Setting<String>(
        "appstore-sandbox-url", .url, default: AppStoreEndpoints.apple.sandbox, .flag, help: "verifyReceipt in the sandbox.")
    public let appleCAFile = Setting<String?>(
        "apple-ca-file", .readableFile, unset: "none (the system's CAs verify Apple)", .flag,
        help: "A PEM file of the CAs that verify verifyReceipt's certificate instead of the system's (a test App Store or a TLS proxy).",
        details: "Checked readable at start.")
    public let sharedSecret = Setting<[String]?>(
        "shared-secret", .sharedSecrets, unset: "not set (Apple answers 21004 for auto-renewable receipts)", .secret, orFile: true,
        help: "Apple's shared secret for the account: one, or two during a rotation, the new one first (comma- or line-separated).",
        details: "\"Rotating secrets without stopping\" below.",
        show: { $0.count == 1 ? "set (masked)" : "set (masked); rotating: the previous secret is accepted too, until you remove it" })
    public let appsFile = Setting<AppCatalog?>(
        "apps-file", .appsFile, unset: "not set: one app, `default`",
        help: "A JSON file naming the deployment's apps: their bundle ids, app-specific shared secrets, Apple ids and refund preferences.",
        details: "\"Several apps in one deployment\" below.", show: { "\($0.apps.count) apps" })
    public let appleBundleID = Setting<[String]>(
        "apple-bundle-id", .list, default: [], .flag,
        help: "Without apps-file, the app's bundle ids (comma-separated): receipts and V2 notifications of any other app are refused.",
        details: "V2 notifications of another app get 401; with none set they are refused with 503, and every receipt is the app's. "
            + "With a Server API key it names the key's app, exactly one.",
        show: { $0.isEmpty ? "not set (any receipt is the app's; V2 notifications are refused)" : $0.joined(separator: ",") })
    public let appleAppID = Setting<Int64?>(
        "apple-app-id", Rule.number("an app's Apple id (a positive number)") { $0 > 0 }, unset: "not set (not checked)", .flag,
        help: "Without apps-file, the app's Apple id (appAppleId), checked in V2 notifications when set.")
    public let refundPreference = Setting<RefundPreference?>(
        "refund-preference", .refundPreference, unset: "none (Apple decides alone)",
        help: "Without apps-file, the app's refund policy: the preference its answers to refund requests give Apple: decline, grant-full or grant-prorated.",
        details: "With apps-file, each app's refund_preference. Sent only with the customer's consent (docs/appstore-server-api.md).")
    public let backend = Setting<VerificationBackend>(
        "backend", .backend, default: .verifyReceipt,
        help: "The backend of subscriptions that name none: verify-receipt (receipts) or server-api (the App Store Server API).",
        show: { "\($0) (for subscriptions that name none)" })
    public let serverAPIIssuerID = Setting<String?>(
        "server-api-issuer-id", .text, unset: "not set",
        help: "The In-App Purchase key's issuer id (App Store Connect → Users and Access → Integrations).",
        details: "The key's three settings come together or not at all.")
    public let serverAPIKeyID = Setting<String?>("server-api-key-id", .text, unset: "not set", help: "The In-App Purchase key's id.")
    public let serverAPIKeyFile = Setting<ServerAPIKey?>(
        "server-api-key-file", .serverAPIKey, unset: "not set (subscriptions on the server-api backend halt the Server API)",
        help: "The In-App Purchase key's .p8 file, for the App Store Server API; the key never prints.",
        show: { "key id \($0.keyID), issuer \($0.issuerID), app \($0.bundleID) (key masked)" })
    public let serverAPIProductionURL = Setting<String>(
        "server-api-production-url", .url, default: ServerAPIEndpoints.apple.production, help: "The App Store Server API in production.")
    public let serverAPISandboxURL = Setting<String>(
        "server-api-sandbox-url", .url, default: ServerAPIEndpoints.apple.sandbox, help: "The App Store Server API in the sandbox.")
    public let serverAPIRateLimit = Setting<Double?>(
        "server-api-rate-limit", .rate, unset: "rate-limit's", help: "Requests per second to each Server API endpoint (Apple limits each alone).",
        show: { "\($0)/s for each endpoint (Apple limits each alone)" })
    public let serverAPIRefundCheckDays = Setting<Int>(
        "server-api-refund-check-days", .whole(1...90), default: 7,
        help: "Days between reads of a quiet subscription's refunded transactions on the Server API (a second call); 1: every verification.",
        details: "A refund of an earlier period shows in no status: its REFUND notification tells at once, this read is the net under a lost one. Every audit night (audit-days) reads them too.",
        show: { $0 == 1 ? "every verification" : "every \($0) days, each night a share of the fleet" })
    public let appleRootCertificate = Setting<CertificateFile?>(
        "apple-root-certificate", .certificateFile, unset: "Apple Root CA - G3, built in (SHA-256 \(AppleRootCertificate.fingerprint))", .flag,
        help: "A root certificate (PEM or DER) for Apple's signatures (V2 notifications, the Server API's answers) instead of the built-in Apple Root CA - G3: a test CA only.",
        details: "serve names it at start.",
        show: { "\($0.certificates.count) certificate(s) from \($0.path) instead of Apple's root (tests and demos only)" })

    // Asking Apple.
    public let rateLimit = Setting<Double>("rate-limit", .rate, default: 50.0, .flag, help: "Requests per second to Apple, summed over the whole fleet.")
    public let rateBurst = Setting<Int>(
        "rate-burst", .whole(atLeast: 1), derived: "1% of rate-limit, at least 1", .flag,
        help: "How many requests may go at once after a quiet spell: no second sees more than rate-limit + rate-burst."
    ) { RateLimit.defaultBurst(perSecond: try $0[Settings.rateLimit]) }
    public let concurrency = Setting<Int>("concurrency", .whole(1...512), default: 8, .flag, help: "Worker threads in this process, each with its own connections.")
    public let jobsPerBatch = Setting<Int>(
        "jobs-per-batch", .whole(1...100), default: 16, .flag,
        help: "The most jobs a worker thread reserves at once: verified one after another, written in one transaction, settled in one round trip.",
        details: "A thread takes what it verifies in about a second at Apple's pace, up to this many: quick answers share a batch, slow ones spread over the threads.")
    public let visibilityTimeout = Setting<Duration>(
        "visibility-timeout", .wholeSeconds("a whole number of seconds ≥ 5") { $0 >= 5 }, default: .seconds(60), .flag,
        help: "Seconds before a dead worker's jobs are reclaimed; a live worker's jobs keep their lease however long they take.",
        details: "At least 3 × redis-timeout (below).")
    public let drainGrace = Setting<Duration>(
        "drain-grace", .wholeSeconds("a whole number of seconds ≥ 0") { $0 >= 0 }, default: .seconds(25), .flag,
        help: "Seconds a stopping worker may take to finish the jobs in hand.")
    public let retryBase = Setting<Duration>(
        "retry-base", .seconds("a number of seconds > 0") { $0 > 0 }, default: .seconds(30),
        help: "Seconds before a failed verification's first retry; full-jitter exponential backoff.")
    public let retryCap = Setting<Duration>(
        "retry-cap", .seconds("a number of seconds > 0") { $0 > 0 }, default: .seconds(3_600), help: "The longest wait between retries, in seconds.")
    public let retryMaxAttempts = Setting<Int>("retry-max-attempts", .whole(atLeast: 1), default: 8, help: "Attempts before a job is a dead letter.")
    public let nightlyHour = Setting<Int>(
        "nightly-hour", Rule.number("an hour from 0 to 23") { (0...23).contains($0) }, default: 2,
        help: "The UTC hour of the nightly run, for planning checks.", show: { "\($0):00 UTC" })
    public let haltAfterConfigErrors = Setting<Int>(
        "halt-after-config-errors", .whole(1...100), default: 3,
        help: "How many different subscriptions of an app must answer a configuration error (21004, 21000) in a row before the app halts.",
        show: { "\($0) subscriptions in a row" })
    // A failing fleet calls Apple once per pause (every 3 s), and the streak forgets itself after
    // this long without a failure: shorter than a few pauses, it would never halt.
    public let haltAfterTransportFailures = Setting<Duration>(
        "halt-after-transport-failures", .wholeSeconds("a whole number of seconds from 30 to 86400") { (30...86_400).contains($0) },
        default: .seconds(600), .flag,
        help: "Seconds every call to Apple may fail in the TLS handshake or HTTP framing (usually passing) before the fleet halts.",
        details: "See *Which transport failures halt* below.",
        show: { "\($0.components.seconds) s of calls all failing in the TLS handshake or HTTP framing" })
    public let auditDays = Setting<Double>(
        "audit-days", Rule.number("a number of days ≥ 0 (0: every night)") { $0 >= 0 }, default: 30.0,
        help: "While an app's V2 notifications arrive, an active subscription is checked when its renewal is due and by a rolling "
            + "audit once in this many nights; an app whose notifications stop is checked nightly until they come back (0: every night).")
    public let refundedRecheckHours = Setting<Double>(
        "refunded-recheck-hours", Rule.number("a number of hours > 0") { $0 > 0 }, default: 24.0,
        help: "Hours between checks of a refunded subscription.")
    public let refundedRecheckDays = Setting<Double>(
        "refunded-recheck-days", Rule.number("a number of days ≥ 0 (0: never)") { $0 >= 0 }, default: 30.0,
        help: "Days a refunded or invalid subscription goes on being checked.")
    public let initialPurchaseHours = Setting<Double>(
        "initial-purchase-hours", Rule.number("a number of hours ≥ 0 (0: never announce)") { $0 >= 0 }, default: 24.0,
        help: "A subscription first seen through a registration whose chain began less than this many hours before is a new purchase, "
            + "announced as initial_purchase; older ones are restores.")
    public let nonRenewingProducts = Setting<[String]>(
        "non-renewing-products", .list, default: [],
        help: "Products sold as non-renewing subscriptions (comma-separated): one-time purchases even where they carry an expiry.")

    // Webhooks.
    public let webhookThreads = Setting<Int>(
        "webhook-threads", .whole(2...256), default: 8, .flag,
        help: "Webhook dispatcher threads in a relay process: the most webhook requests it has in flight.",
        details: "Each has its own PostgreSQL connection (docs/webhooks.md).")
    public let webhookEndpointConcurrency = Setting<Int>(
        "webhook-endpoint-concurrency", .endpointConcurrency, default: 2, .flag,
        help: "The most webhook requests in flight to one endpoint, fleet-wide; below webhook-threads, so that one receiver that never answers leaves threads for the others.",
        show: { "\($0) in flight per endpoint" })
    public let allowPrivateWebhooks = Setting<Bool>(
        "allow-private-webhooks", .boolean, default: false, .flag,
        help: "Let webhooks reach loopback, private, link-local and unique-local addresses over plain http (development and tests only).",
        details: "In production webhooks go over https to public addresses.",
        show: { $0 ? "yes: webhooks may reach loopback and private addresses over plain http (development only)" : "no (https to public addresses only)" })
    public let webhookProxy = Setting<String?>(
        "webhook-proxy", .proxyURL, unset: "none (direct; proxy variables are ignored for webhooks)", .flag,
        help: "A proxy for webhook deliveries, e.g. http://egress.internal:3128.",
        details: "It then connects to receivers, so it must refuse internal addresses itself. Proxy variables in the environment "
            + "(http_proxy, https_proxy, ALL_PROXY) are never used for webhooks.")
    public let webhookSecretKey = Setting<WebhookKeyring?>(
        "webhook-secret-key", .webhookKeyring, unset: "not set (webhooks add refuses; encrypted secrets cannot sign)", .secret,
        help: "The base64 of 32 random bytes (openssl rand -base64 32) that encrypts webhook secrets at rest (AES-256-GCM); the same on every process.",
        details: "config check shows its key id only.", show: { "set (masked): \($0)" })
    public let webhookSecretPreviousKeys = Setting<[String]>(
        "webhook-secret-previous-keys", .list, default: [], .secret,
        help: "Older keys (comma-separated), still accepted to open secrets during a rotation (\"Rotating the webhook secret key\" below).",
        show: { $0.isEmpty ? "none" : "\($0.count) set (masked)" })

    // Keeping data.
    public let eventsStreamRetentionDays = Setting<Double>(
        "events-stream-retention-days", Rule.number("a number of days from 0 to 3650") { $0 > 0 && $0 <= 3_650 }, default: 7.0,
        help: "How long the {rf}:events stream keeps an event.",
        details: "The ledger keeps every event longer; `webhooks replay` reaches past the stream.",
        show: { "\($0) (the ledger keeps events longer)" })
    public let retentionVerificationsDays = Setting<Double>(
        "retention-verifications-days", .retentionDays(), default: 90.0,
        help: "How long `receiptfleet prune` keeps verification attempts (and the scheduler's nights of passes that summarise them); 0 keeps them for ever.",
        details: "See \"Deleting a customer and keeping data bounded\".", show: Self.kept(""))
    public let retentionEventsDays = Setting<Double>(
        "retention-events-days", .retentionDays(atLeast: "events-stream-retention-days") { try $0[Settings.eventsStreamRetentionDays] },
        derived: "400, or events-stream-retention-days if longer",
        help: "How long prune keeps published events none of whose webhook deliveries is pending; 0 keeps them for ever.",
        details: "At least events-stream-retention-days, so that `webhooks replay` reaches everything the stream had.",
        show: Self.kept(" (published events; `webhooks replay` reaches this far)")
    ) { max(400, try $0[Settings.eventsStreamRetentionDays]) }
    public let retentionWebhookLogsDays = Setting<Double>(
        "retention-webhook-logs-days", .retentionDays(), default: 30.0,
        help: "How long prune keeps webhook deliveries that ended (delivered or failed) and webhook attempts; 0 keeps them for ever.",
        show: Self.kept(""))
    public let retentionExpiredReceiptsDays = Setting<Double>(
        "retention-expired-receipts-days", .retentionDays(), default: 400.0,
        help: "How long after a subscription expired or was refunded its receipt is kept; 0 keeps receipts for ever.",
        show: Self.kept(" (after expiry or refund)"))

    // serve and console.
    public let address = Setting<ListenAddress>(
        "address", .listenAddress, derived: "127.0.0.1:8080 for serve, 127.0.0.1:8081 for console", .flag, for: [.serve, .console],
        help: "HOST:PORT to listen on (port 0 picks a free one)."
    ) { ListenAddress.standard(for: $0.command) }
    public let apiTokens = Setting<NamedTokens?>(
        "api-tokens", .apiTokens, unset: "not set (needed by `serve` only)", .secret, for: .serve, orFile: true,
        help: "The API's clients: NAME:TOKEN or NAME(read+register+…):TOKEN entries separated by commas or lines (scopes: what the token may do; none: everything); a name twice while its token is replaced.",
        show: Self.tokens)
    public let notificationEnvironments = Setting<Set<AppStoreEnvironment>>(
        "notification-environments", .environments, default: [.production], .flag, for: .serve,
        help: "Environments whose notifications are processed (Production, Sandbox); others are acknowledged and ignored.")
    public let maxBodyBytes = Setting<Int>(
        "max-body-bytes", Rule.number("a size from 1024 to 67108864 bytes") { (1_024...(64 << 20)).contains($0) }, default: 1 << 20,
        .flag, for: .serve, help: "The largest request body accepted, in bytes.")
    public let clientRateLimit = Setting<Double>(
        "client-rate-limit", .rate, default: 20.0, .flag, for: .serve,
        help: "Requests per second per client (API token, or address without one), for every serve replica together (kept in Redis).")
    public let clientRateBurst = Setting<Int>(
        "client-rate-burst", .whole(atLeast: 1), default: 40, .flag, for: .serve, help: "Requests a client may send at once after a quiet spell.")
    public let notificationRateLimit = Setting<Double>(
        "notification-rate-limit", .rate, default: 100.0, for: .serve,
        help: "Apple's authenticated notifications per second, all together (docs/api.md).")
    public let notificationRateBurst = Setting<Int>(
        "notification-rate-burst", .whole(atLeast: 1), default: 200, for: .serve, help: "Apple's notifications that may come at once after a quiet spell.")
    public let lanes = Setting<Int>(
        "lanes", .whole(1...256), default: 4, .flag, for: .serve,
        help: "Threads with their own Redis, PostgreSQL and Apple connections serving requests.")
    public let trustedProxies = Setting<String?>(
        "trusted-proxies", .trustedProxies, unset: "none (the peer's address is the caller's)", .flag, for: [.serve, .console],
        help: "Proxies (comma-separated addresses or CIDR networks) whose trusted-proxy-header names the caller's address, e.g. 10.0.0.0/8,127.0.0.1.")
    public let trustedProxyHeader = Setting<ForwardedHeader>(
        "trusted-proxy-header", .forwardedHeader, default: .xForwardedFor, .flag, for: [.serve, .console],
        help: "The one header the trusted proxies name the caller in: x-forwarded-for (nginx, AWS load balancers) or forwarded (RFC 7239); the other is never read.",
        show: { $0.rawValue })
    public let consoleTokens = Setting<NamedTokens?>(
        "console-tokens", .operatorTokens, unset: "not set (no ops console)", .secret, for: [.serve, .console], orFile: true,
        help: "The ops console's operators: NAME:TOKEN entries as api-tokens (never the API's tokens); serve mounts /console when set, console needs them.",
        show: Self.tokens)
    public let consoleSecureCookies = Setting<Bool>(
        "console-secure-cookies", .boolean, default: false, for: [.serve, .console],
        help: "Mark the console's session cookie Secure: set it when the console is reached over TLS.",
        show: { $0 ? "yes (the session cookie goes over TLS only)" : "no (set it behind TLS)" })

    /// Retention days: 0 keeps for ever.
    private static func kept(_ note: String) -> @Sendable (Double) -> String {
        { $0 == 0 ? "0 (kept for ever)" : "\($0)\(note)" }
    }

    private static let tokens: @Sendable (NamedTokens) -> String = { tokens in
        "\(tokens.names.count) set (masked): \(tokens.names.joined(separator: ", "))"
            + (tokens.rotating.isEmpty ? "" : "; rotating (old and new both accepted): \(tokens.rotating.joined(separator: ", "))")
    }
}

/// The registry: `Settings.rateLimit`, and every setting in order (`Settings.all`).
@dynamicMemberLookup
public enum Settings {
    public static let registry = SettingsRegistry()

    public static subscript<Value>(dynamicMember path: KeyPath<SettingsRegistry, Setting<Value>>) -> Setting<Value> {
        registry[keyPath: path]
    }

    /// Each setting, then the KEY-file of a secret that may come from a file.
    public static let all: [any AnySetting] = Mirror(reflecting: registry).children.flatMap { child -> [any AnySetting] in
        guard let setting = child.value as? any AnySetting else { return [] }
        return [setting] + (setting.fileSetting.map { [$0] as [any AnySetting] } ?? [])
    }

    public static let named: [String: any AnySetting] = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0) })

    /// Each setting by its name in the registry (`rateLimit` for rate-limit), as the CLI's flag
    /// groups name their flags.
    public static let byName: [String: any AnySetting] = Dictionary(uniqueKeysWithValues: Mirror(reflecting: registry).children.compactMap {
        child in (child.value as? any AnySetting).map { (child.label ?? "", $0) }
    })

    /// The environment variable of a setting: RECEIPTFLEET_RATE_LIMIT for rate-limit.
    public static func variable(ofKey key: String) -> String {
        "RECEIPTFLEET_" + key.uppercased().replacingOccurrences(of: "-", with: "_")
    }
}
