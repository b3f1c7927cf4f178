import AppStore
import EventRelay
import Foundation
import JobQueue
import Ledger
import PostgresClient
import RedisClient
import VerificationUseCase

/// Everything a fleet process needs to know, resolved and validated (see `receiptfleet config check`):
/// each property is read from its setting in `SettingsRegistry`, whose default is the only one.
public struct FleetSettings: Sendable {
    /// Both hold the servers' passwords: show them only through `Redact.connectionString`.
    public var redisURL: String
    public var postgresURL: String
    /// A direct PostgreSQL connection for the outbox relay, whose LISTEN needs a session of its
    /// own: set it when `postgresURL` goes through a transaction-pooling PgBouncer. Nil: the relay
    /// uses `postgresURL`. Holds a password, like the others.
    public var relayPostgresURL: String?
    /// The deployment's Redis key prefix; it must hold a `{…}` hash tag.
    public var keyPrefix: String
    public var endpoints: AppStoreEndpoints
    /// The account's primary shared secret (`shared-secret`): for every app without one of its own.
    public var sharedSecret: SharedSecret?
    /// The secret being replaced, during a rotation (`shared-secret` names two): Apple's answers are
    /// accepted for either, and V1 notifications carry either as their password.
    public var previousSharedSecret: SharedSecret?
    /// The deployment's apps (`apps-file`); see `sharedSecrets(forApp:)` for the secret each uses.
    public var apps: AppCatalog
    /// The App Store Server API's key, hosts and trusted roots; nil when none is configured.
    public var serverAPI: ServerAPISettings?
    /// The backend of subscriptions that name none (`subscriptions.backend` is NULL).
    public var defaultBackend: VerificationBackend
    /// Apple's requests per second for the whole fleet, and how many may come at once after a lull.
    public var rateLimit: RateLimit
    public var pausePolicy = PausePolicy.standard
    public var retryPolicy: RetryPolicy
    /// Worker threads in one process, each with its own connections.
    public var concurrency: Int
    /// The most jobs a worker thread takes at once (it takes what it verifies in about a second,
    /// `Processor.batchSize`); their results are written in one transaction.
    public var jobsPerBatch: Int
    /// How long a reserved job may go without an ack before another worker takes it over.
    public var visibilityTimeout: Duration
    /// Deliveries without an ack after which a job is a dead letter (it keeps killing workers).
    public var maxDeliveries = 5
    /// How long a stopping worker process may take to finish the jobs it holds.
    public var drainGrace: Duration
    /// verifyReceipt timeouts.
    public var appleTimeout: Duration = .seconds(30)
    /// How long each Redis command, and each PostgreSQL call, may wait for its server before it fails
    /// and its connection is made again: a stopped server's kernel still acknowledges packets, so
    /// only a client-side deadline notices it (see `redisConfiguration()`, `postgresConfiguration()`).
    public var redisTimeout: Duration
    public var postgresTimeout: Duration
    /// Where every process reads the time, its queue's scripts included: Redis's clock, or shifted
    /// by `QueueKeys.timeShift` for drills and benchmarks (`shifted-clock`; see `ShiftedClock`).
    public var scriptClock: ScriptClock
    /// The hour (UTC) of the nightly scheduler run; checks are planned against it.
    public var nightlyHourUTC: Int
    public var checkSchedule: CheckSchedule
    /// A subscription first seen through a registration whose chain began less than this long
    /// before is a new purchase, announced as `initial_purchase`; older ones are restores.
    public var initialPurchaseWindow: TimeInterval
    /// Products the app sells as non-renewing subscriptions: one-time purchases even where their
    /// entries carry an expiry (see `OneTimePurchases`).
    public var nonRenewingProductIDs: Set<String>
    /// How many different subscriptions must answer a configuration error (21004, 21000) in a row
    /// before the fleet halts; a lone one goes to the dead letters.
    public var haltAfterConfigurationErrors: Int
    /// Days between reads of a quiet Server API subscription's refunded transactions (`RefundCheck`).
    public var refundCheckDays: Int
    /// How long every call to Apple may fail in a way that usually passes (a broken TLS handshake,
    /// garbled HTTP: `VerificationAction.unavailableUnlessPersistent`) before the fleet halts: by
    /// then it is a misconfiguration, such as https to a plain HTTP port, and no pause will end it.
    public var haltAfterTransportFailures: Duration
    /// A PEM file of the CAs that verify the App Store's certificate instead of the system's: for
    /// a test App Store or a TLS-intercepting proxy only.
    public var appleCAFile: String?
    /// Where the process serves /metrics, /healthz and /readyz; nil serves nothing.
    public var metricsAddress: MetricsAddress?
    /// Webhook dispatcher threads in a relay process, each with its own connections: the most
    /// webhook requests the process has in flight.
    public var webhookThreads: Int
    /// The most webhook requests in flight to one endpoint, over the whole fleet; below
    /// `webhookThreads`, so that one receiver that stops answering cannot hold every thread.
    public var webhookEndpointConcurrency: Int
    /// Whether webhooks may go to loopback, private and other non-public addresses, and over plain
    /// http (`allow-private-webhooks`): for development and tests only.
    public var allowPrivateWebhooks: Bool
    /// How long the `{rf}:events` stream keeps an event (`events-stream-retention`). The ledger
    /// keeps every event longer, so `webhooks replay` reaches past the stream.
    public var eventsStreamRetention: Duration
    /// How long the ledger keeps attempts, events, webhook logs and long-expired receipts
    /// (`retention-*-days`; `receiptfleet prune` applies it).
    public var retention: RetentionPolicy
    /// The proxy webhook deliveries go through (`webhook-proxy`); nil goes direct, whatever the
    /// environment's proxy variables say.
    public var webhookProxy: String?
    /// The keys webhook secrets are encrypted with at rest (`webhook-secret-key`,
    /// `webhook-secret-previous-keys`); nil when none is configured.
    public var webhookSecretKeys: WebhookKeyring?

    /// Every setting as `configuration` resolves it (flag, environment, file, default), checked.
    /// Tests start from `try FleetSettings(.defaults)` and change what they need.
    public init(_ configuration: ResolvedConfiguration) throws {
        let secrets = try configuration[Settings.sharedSecret] ?? []
        redisURL = try configuration[Settings.redisURL]
        postgresURL = try configuration[Settings.postgresURL]
        relayPostgresURL = try configuration[Settings.relayPostgresURL]
        keyPrefix = try configuration[Settings.keyPrefix]
        endpoints = try AppStoreEndpoints(
            production: configuration[Settings.appstoreProductionURL], sandbox: configuration[Settings.appstoreSandboxURL])
        sharedSecret = secrets.first.map(SharedSecret.init)
        previousSharedSecret = secrets.count == 2 ? SharedSecret(secrets[1]) : nil
        apps = try configuration[Settings.appsFile]
            ?? .single(
                bundleIDs: Set(configuration[Settings.appleBundleID]), appleID: configuration[Settings.appleAppID],
                refundPreference: configuration[Settings.refundPreference])
        rateLimit = try RateLimit(perSecond: configuration[Settings.rateLimit], burst: configuration[Settings.rateBurst])
        retryPolicy = try RetryPolicy(
            base: configuration[Settings.retryBase], cap: configuration[Settings.retryCap],
            maxAttempts: configuration[Settings.retryMaxAttempts])
        concurrency = try configuration[Settings.concurrency]
        jobsPerBatch = try configuration[Settings.jobsPerBatch]
        visibilityTimeout = try configuration[Settings.visibilityTimeout]
        drainGrace = try configuration[Settings.drainGrace]
        redisTimeout = try configuration[Settings.redisTimeout]
        postgresTimeout = try configuration[Settings.postgresTimeout]
        scriptClock = try configuration[Settings.shiftedClock] ? .shifted : .redis
        nightlyHourUTC = try configuration[Settings.nightlyHour]
        let auditDays = try configuration[Settings.auditDays].rounded()
        checkSchedule = try CheckSchedule(
            refundedOrInvalidInterval: 3_600 * configuration[Settings.refundedRecheckHours],
            refundedOrInvalidWatchPeriod: 86_400 * configuration[Settings.refundedRecheckDays],
            auditInterval: auditDays > 0 ? 86_400 * auditDays : nil)
        initialPurchaseWindow = try 3_600 * configuration[Settings.initialPurchaseHours]
        nonRenewingProductIDs = try Set(configuration[Settings.nonRenewingProducts])
        haltAfterConfigurationErrors = try configuration[Settings.haltAfterConfigErrors]
        haltAfterTransportFailures = try configuration[Settings.haltAfterTransportFailures]
        appleCAFile = try configuration[Settings.appleCAFile]
        metricsAddress = try configuration[Settings.metricsAddress]
        webhookThreads = try configuration[Settings.webhookThreads]
        webhookEndpointConcurrency = try configuration[Settings.webhookEndpointConcurrency]
        (allowPrivateWebhooks, webhookProxy, webhookSecretKeys) = try configuration.webhookSettings()
        eventsStreamRetention = try Duration.seconds(86_400 * configuration[Settings.eventsStreamRetentionDays])
        retention = try RetentionPolicy(
            verifications: Self.days(configuration[Settings.retentionVerificationsDays]),
            events: Self.days(configuration[Settings.retentionEventsDays]),
            webhookLogs: Self.days(configuration[Settings.retentionWebhookLogsDays]),
            expiredReceipts: Self.days(configuration[Settings.retentionExpiredReceiptsDays]))
        (defaultBackend, refundCheckDays, serverAPI) = try configuration.serverAPISettings()
    }

    /// A `retention-*-days` setting; 0 keeps for ever.
    private static func days(_ days: Double) -> Duration? { days == 0 ? nil : .days(days) }

    /// How this process's webhook dispatchers deliver.
    public var webhookConfiguration: WebhookConfiguration {
        WebhookConfiguration(
            perEndpointConcurrency: webhookEndpointConcurrency, secretKeys: webhookSecretKeys,
            allowsPrivateNetworks: allowPrivateWebhooks, proxy: webhookProxy)
    }

    /// The webhook endpoints, on a PostgreSQL connection of their own, with the secrets' keys.
    public func webhookRegistry() throws -> WebhookRegistry {
        WebhookRegistry(
            database: try PostgresConnection(configuration: postgresConfiguration()), keyring: webhookSecretKeys,
            allowsPrivateNetworks: allowPrivateWebhooks)
    }

    /// Redis as `redisURL` names it, with `redisTimeout` for every command.
    public func redisConfiguration() throws(RedisError) -> RedisConfiguration {
        var configuration = try RedisConfiguration(url: redisURL)
        configuration.commandTimeout = redisTimeout
        return configuration
    }

    /// PostgreSQL as `postgresURL` names it, with `postgresTimeout` for every call, connecting
    /// included when it is the shorter (a server that accepts but never answers stalls a connect too).
    public func postgresConfiguration() throws -> PostgresConfiguration {
        try postgresConfiguration(of: postgresURL)
    }

    /// The outbox relay's PostgreSQL: `relayPostgresURL`, else `postgresURL`, with the same deadlines.
    public func relayPostgresConfiguration() throws -> PostgresConfiguration {
        try postgresConfiguration(of: relayPostgresURL ?? postgresURL)
    }

    private func postgresConfiguration(of url: String) throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(url)
        configuration.callTimeout = postgresTimeout
        configuration.connectTimeout = min(configuration.connectTimeout, postgresTimeout)
        return configuration
    }
}

/// The verification use case reads its policy from the settings themselves.
extension FleetSettings: VerificationPolicy {
    public var defaultApp: String { AppCatalog.defaultAppName }
    public var auditNights: Int? { checkSchedule.auditNights }
}
