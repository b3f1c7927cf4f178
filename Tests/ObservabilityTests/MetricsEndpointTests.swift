import AppStore
import BuildInfo
import EventRelay
@testable import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Ledger
import Observability
import RedisClient
import TestSupport
import Testing

/// A metrics server over real HTTP, with a worker pool, the relay and the scheduler recording into
/// it, against real Redis, PostgreSQL and the simulator: what it serves must be what happened.
@Suite struct MetricsEndpointTests {
    @Test func aWorkersCountersAndTheFleetGaugesTellWhatHappened() async throws {
        try await Deployment.with(receipts: 12) { deployment in
            let metrics = ProcessMetrics()
            try await withMetricsServer(deployment.settings, metrics: metrics) { server in
                let summary = try await schedule(deployment, metrics: metrics)
                #expect(summary.enqueued > 0)
                try await work(deployment, metrics: metrics)
                let scrape = try await server.scrape()

                // Every job left the queue exactly once: acknowledged (verified, failed for good,
                // nothing to do) or buried; retries and postponements came in between.
                func processed(_ outcome: String) -> Int { Int(scrape.value("receiptfleet_jobs_processed_total", ["outcome": outcome]) ?? -1) }
                let verified = try await deployment.count("SELECT count(*) AS n FROM verifications WHERE outcome = 'verified'")
                let failed = try await deployment.count("SELECT count(*) AS n FROM verifications WHERE outcome = 'permanent_failure'")
                #expect(verified > 0)
                #expect(processed("verified") == verified)
                #expect(processed("permanent_failure") == failed)
                #expect(processed("verified") + processed("permanent_failure") + processed("skipped") + processed("dead") == summary.enqueued)
                #expect(scrape.value("receiptfleet_scheduler_jobs_enqueued_total") == Double(summary.enqueued))

                // Apple's answers: one per exchange, each timed.
                #expect((scrape.value("receiptfleet_apple_responses_total", ["status": "0"]) ?? 0) > 0)
                let answers = scrape.value("receiptfleet_apple_responses_total") ?? 0
                #expect(scrape.value("receiptfleet_verify_receipt_duration_seconds_count") == answers)
                let attempts = try await deployment.count("SELECT count(*) AS n FROM verifications")
                #expect(answers >= Double(attempts))
                #expect((scrape.value("receiptfleet_persist_duration_seconds_count") ?? 0) > 0)

                // Fleet-wide gauges: what Redis and PostgreSQL say.
                let stats = try await deployment.queueStats()
                #expect(scrape.value("receiptfleet_rate_limiter_tokens_granted_total") == Double(stats.limiterGranted))
                #expect(stats.limiterGranted > 0)
                #expect(scrape.value("receiptfleet_rate_limit_per_second") == 5_000)
                let unpublished = try await deployment.count("SELECT count(*) AS n FROM events WHERE published_at IS NULL")
                #expect(unpublished > 0, "no relay ran")
                #expect(scrape.value("receiptfleet_outbox_unpublished_events") == Double(unpublished))
                #expect((scrape.value("receiptfleet_outbox_lag_seconds") ?? 0) > 0)
                let finishedAt = try #require(summary.finishedAt).timeIntervalSince1970
                #expect(abs((scrape.value("receiptfleet_scheduler_last_success_timestamp_seconds") ?? 0) - finishedAt) < 0.01)
                #expect(scrape.value("receiptfleet_fleet_paused") == 0)
                #expect(scrape.value("receiptfleet_fleet_halted") == 0)
                #expect(scrape.value("receiptfleet_build_info", ["version": BuildInfo.version, "commit": BuildInfo.commit]) == 1)
            }
        }
    }

    /// The refund requests pending within two hours of Apple's deadline, read from PostgreSQL at
    /// each scrape: the same in every process, also when no worker can answer them (issue 30, part 3).
    @Test func theRefundRequestsNearingTheirDeadlineAreCountedFromTheLedger() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { server in
                #expect(try await server.scrape().value("receiptfleet_consumption_requests_nearing_deadline") == 0)
                let database = deployment.database
                let now = Date()
                try await onOwnThread {
                    let ledger = Ledger(try database.connect())
                    // Asked 11 h and 10.5 h ago (deadlines within the hour and a half), 1 h ago, and 13 h ago (missed).
                    for (transaction, hoursAgo) in [("1", 11.0), ("2", 10.5), ("3", 1.0), ("4", 13.0)] {
                        try ledger.recordConsumptionRequest(ConsumptionRequestNotice(
                            dedupeKey: "v2:gauge-\(transaction)", app: "default", environment: .production, transactionID: transaction,
                            originalTransactionID: nil, subscriptionID: nil, productType: nil, familyShared: false, reason: nil,
                            signedAt: now.addingTimeInterval(-hoursAgo * 3_600)), now: now)
                    }
                    // One of the two near their deadline is answered: it no longer counts.
                    let due = try ledger.claimDueConsumptionRequests(now: now, limit: 1, lease: .seconds(60))
                    try ledger.recordConsumptionUnanswered(id: try #require(due.first).id, reason: "no_consent")
                }
                #expect(try await server.scrape().value("receiptfleet_consumption_requests_nearing_deadline") == 1)
                #expect(try await deployment.count("SELECT count(*) AS n FROM consumption_requests WHERE state = 'pending'") == 2)
            }
        }
    }

    /// An app's freshness and checks follow the last scheduler pass's verdict: a verdict without
    /// them (no notification of a change in the day) reads NaN, not an earlier pass's figures.
    @Test func anAppsFreshnessReadsNoValueOnceTheLastPassHadNone() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { server in
                let (settings, app) = (deployment.settings, try #require(deployment.settings.apps.names.first))
                func record(freshness: Double?, checks: Double?) async throws {
                    var judged = NotificationHealth.judge(app: app, nil)
                    (judged.freshnessP99Seconds, judged.checksPerSubscription) = (freshness, checks)
                    let verdict = judged
                    try await onOwnThread {
                        try NotificationHealth.record(
                            [verdict], on: RedisConnection(RedisConfiguration(url: settings.redisURL)), keys: QueueKeys(prefix: settings.keyPrefix))
                    }
                }
                try await record(freshness: 12.5, checks: 0.04)
                let before = try await server.scrape()
                #expect(before.value("receiptfleet_app_freshness_p99_seconds", ["app": app]) == 12.5)
                #expect(before.value("receiptfleet_app_checks_per_subscription", ["app": app]) == 0.04)
                try await record(freshness: nil, checks: nil)
                let after = try await server.scrape()
                #expect(after.value("receiptfleet_app_freshness_p99_seconds", ["app": app])?.isNaN == true)
                #expect(after.value("receiptfleet_app_checks_per_subscription", ["app": app])?.isNaN == true)
            }
        }
    }

    @Test func theJobGaugesMatchRedisStateByState() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { server in
                // 3 ordinary and 2 high-priority jobs; then one postponed, one held, one buried.
                let settings = deployment.settings
                let enqueued = ContinuousClock.now
                try await onOwnThread {
                    let queue = try JobQueue(
                        connection: RedisConnection(RedisConfiguration(url: settings.redisURL)),
                        keys: QueueKeys(prefix: settings.keyPrefix), consumer: "gauge-test")
                    _ = try queue.enqueue(subscriptionIDs: [1, 2, 3], run: "gauges", reason: .nightly)
                    _ = try queue.enqueue(subscriptionIDs: [4, 5], run: "gauges", reason: .manual)
                    _ = try queue.postpone(try #require(queue.reserve(block: .zero).first), for: .seconds(600))
                    _ = try #require(queue.reserve(block: .zero).first)  // held: reserved
                    _ = try queue.bury(try #require(queue.reserve(block: .zero).first), failure: JobFailure(errorClass: "test", message: "buried by the test"))
                }
                let scrape = try await server.scrape()
                let stats = try await deployment.queueStats()
                func jobs(_ state: String) -> Double? { scrape.value("receiptfleet_jobs", ["state": state]) }
                #expect(jobs("ready") == 2 && jobs("ready") == Double(stats.ready - stats.readyHigh))
                #expect(jobs("ready_high") == 0 && jobs("ready_high") == Double(stats.readyHigh))
                #expect(jobs("reserved") == 1 && jobs("reserved") == Double(stats.reserved))
                #expect(jobs("delayed") == 1 && jobs("delayed") == Double(stats.delayedDue + stats.delayedLater))
                #expect(jobs("dead") == 1 && jobs("dead") == Double(stats.dead))
                // Counted from the second the oldest job was enqueued in (so up to a second more than its age),
                // however long a loaded run kept this test waiting since.
                let age = try #require(scrape.value("receiptfleet_oldest_job_age_seconds"))
                #expect(age > 0 && age < 1 + enqueued.duration(to: .now).seconds, "\(age) s")
            }
        }
    }

    @Test func liveWorkersCountTheThreadsOfARunningPool() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { server in
                #expect(try await server.scrape().value("receiptfleet_live_workers") == 0)
                let worker = RunningServices.worker(settings: deployment.settings, logger: quietLogger)
                let settings = deployment.settings
                let (live, processes) = try await worker.whileRunning {
                    var live: Double?
                    try await eventually(within: .seconds(15), every: .milliseconds(200)) {
                        live = try await server.scrape().value("receiptfleet_live_workers")
                        return live == Double(deployment.settings.concurrency)
                    }
                    // The heartbeat also says what the process is, for the console's workers page.
                    let processes = try await onOwnThread {
                        try JobQueue(connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
                                     consumer: "probe").processes()
                    }
                    return (live, processes)
                }
                #expect(live == Double(deployment.settings.concurrency))
                #expect(processes.map(\.name) == [JobQueue.processName])
                #expect(processes.first.map { ($0.host, $0.pid, $0.threads) } ?? ("", 0, 0) == (JobQueue.hostName, Int(getpid()), settings.concurrency))
                #expect(try await server.scrape().value("receiptfleet_live_workers") == 0, "deregistered on drain")
            }
        }
    }

    @Test func theRelaysCountersMoveAndNoSecretIsEverShown() async throws {
        let sharedSecret = "metrics-test-shared-secret-4711"
        try await Deployment.with(receipts: 16, sharedSecret: sharedSecret) { deployment in
            let receiver = try TestHTTPServer(.respond([TestHTTPServer.Response(status: 200)]))
            defer { receiver.stop() }
            let database = deployment.database
            let webhookSecret = try await onOwnThread {
                try WebhookRegistry.local(database.connect()).add(url: "http://127.0.0.1:\(receiver.port)/hook", eventTypes: []).secret.text
            }
            let metrics = ProcessMetrics()
            try await withMetricsServer(deployment.settings, metrics: metrics) { server in
                _ = try await schedule(deployment, metrics: metrics)
                try await work(deployment, metrics: metrics)
                let events = try await deployment.count("SELECT count(*) AS n FROM events")
                #expect(events > 0)

                _ = try await RunningServices.relay(settings: deployment.settings, metrics: metrics, logger: quietLogger).whileRunning {
                    try await eventually(every: .milliseconds(100)) {
                        try await deployment.count("SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'delivered'") >= events
                    }
                }

                let scrape = try await server.scrape()
                #expect(scrape.value("receiptfleet_events_published_total", ["sink": "stream"]) == Double(events))
                #expect(scrape.value("receiptfleet_webhook_deliveries_total", ["outcome": "delivered"]) == Double(events))
                #expect(scrape.value("receiptfleet_webhook_deliveries_total", ["outcome": "retry"]) == 0)
                #expect(scrape.value("receiptfleet_outbox_unpublished_events") == 0)
                #expect(scrape.value("receiptfleet_outbox_lag_seconds") == 0)

                // The shared secret worked (Apple answered 0) yet shows nowhere, nor does anything else secret.
                #expect((scrape.value("receiptfleet_apple_responses_total", ["status": "0"]) ?? 0) > 0)
                let shown = [scrape.text, try await server.fetch("/readyz").body, try await server.fetch("/healthz").body].joined()
                var secrets = [sharedSecret, webhookSecret, String(webhookSecret.dropFirst("whsec_".count))]
                secrets += [TestServers.redisURL, TestServers.postgresURL].compactMap { URLComponents(string: $0)?.password }
                secrets += deployment.receipts.map(\.receiptData)
                for secret in secrets { #expect(!shown.contains(secret)) }
                #expect(secrets.count == 5 + deployment.receipts.count, "both servers' passwords were found")
            }
        }
    }

    @Test func readyzSaysWhyWhileTheFleetIsHaltedAndNotWhilePaused() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { server in
                #expect(try await server.fetch("/readyz").status == 200)
                let settings = deployment.settings
                // A pause long enough to outlast the slowest scrape: the standard 2 s one can end
                // before a loaded CI machine reads the gauge.
                let longPause = try PausePolicy(base: .seconds(600), cap: .seconds(600), probeLease: .seconds(60), streak: 5)
                let gate = { @Sendable in
                    FleetGate(connection: try RedisConnection(RedisConfiguration(url: settings.redisURL)),
                              keys: try QueueKeys(prefix: settings.keyPrefix), limit: settings.rateLimit, pausePolicy: longPause)
                }
                _ = try await onOwnThread {
                    let gate = try gate()
                    for _ in 0..<gate.pausePolicy.streak { try gate.reportUnavailable() }
                }
                #expect(try await server.fetch("/readyz").status == 200, "a pause is Apple's, and passes")
                #expect(try await server.scrape().value("receiptfleet_fleet_paused") == 1)

                try await onOwnThread { try gate().halt(reason: "Apple answered 21004: the shared secret is wrong") }
                let halted = try await server.fetch("/readyz")
                #expect(halted.status == 503)
                let reason = try JSONDecoder().decode([String: String].self, from: Data(halted.body.utf8))["reason"] ?? ""
                #expect(reason.contains("halted") && reason.contains("21004") && reason.contains("receiptfleet resume"))
                #expect(try await server.scrape().value("receiptfleet_fleet_halted") == 1)
                #expect(try await server.fetch("/healthz").status == 200)

                try await onOwnThread { try gate().resume() }
                #expect(try await server.fetch("/readyz").status == 200)
                let scrape = try await server.scrape()
                #expect(scrape.value("receiptfleet_fleet_halted") == 0 && scrape.value("receiptfleet_fleet_paused") == 0)

                // The Server API alone halted: its own gauge; the worker stays ready, verifyReceipt goes on.
                try await onOwnThread { try gate().halt(reason: "the App Store Server API refuses the key", group: "server_api") }
                let serverAPIHalted = try await server.scrape()
                #expect(serverAPIHalted.value("receiptfleet_server_api_halted") == 1 && serverAPIHalted.value("receiptfleet_fleet_halted") == 0)
                #expect(try await server.fetch("/readyz").status == 200)
                try await onOwnThread { try gate().resume(budgets: settings.serverAPIBudgets) }
                #expect(try await server.scrape().value("receiptfleet_server_api_halted") == 0)
            }
        }
    }

    @Test func readyzFailsWhileRedisOrPostgreSQLDoesNotAnswer() async throws {
        try await Deployment.with { deployment in
            var deadRedis = deployment.settings
            deadRedis.redisURL = "redis://:dead-redis-password@127.0.0.1:1/0"
            var deadPostgres = deployment.settings
            deadPostgres.postgresURL = "postgresql://fleet:dead-postgres-password@127.0.0.1:1/receiptfleet"
            for (settings, culprit, password) in [
                (deadRedis, "Redis", "dead-redis-password"), (deadPostgres, "PostgreSQL", "dead-postgres-password"),
            ] {
                try await withMetricsServer(settings) { server in
                    let ready = try await server.fetch("/readyz")
                    #expect(ready.status == 503)
                    #expect(ready.body.contains("cannot read \(culprit): "), "\(ready.body)")
                    #expect(!ready.body.contains(password))
                    #expect(try await server.fetch("/healthz").status == 200)
                    let metrics = try await server.fetch("/metrics")
                    #expect(metrics.status == 200 && metrics.body.contains("receiptfleet_jobs_processed_total"))
                    #expect(!metrics.body.contains(password))
                }
            }
        }
    }

    @Test func aTakenPortFailsNamingTheAddressAndTheFlag() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { first in
                var settings = deployment.settings
                settings.metricsAddress = first.address
                let second = try #require(MetricsServer(settings: settings, metrics: ProcessMetrics(), clock: settings.processClock(), logger: quietLogger))
                let error = await #expect(throws: MetricsServerError.self) { try await second.run() }
                let text = error?.description ?? ""
                #expect(text.contains("127.0.0.1:\(first.address.port)") && text.contains("in use"), "\(text)")
                #expect(text.contains("--metrics-address") && text.contains("RECEIPTFLEET_METRICS_ADDRESS"))
                let health = try await first.fetch("/healthz")
                #expect(health.status == 200, "the first server serves on")
            }
        }
    }

    @Test func offServesNothing() async throws {
        var settings = try FleetSettings.forTest(redisURL: TestServers.redisURL, postgresURL: TestServers.postgresURL, rateLimit: try RateLimit(perSecond: 1, burst: 1))
        settings.metricsAddress = try MetricsAddress.parse("off")
        #expect(MetricsServer(settings: settings, metrics: ProcessMetrics(), clock: settings.processClock(), logger: quietLogger) == nil)
    }
}
