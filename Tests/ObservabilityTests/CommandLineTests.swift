import AppStoreSimulator
import BuildInfo
import Fleet
import FleetConfiguration
import Foundation
import JobQueue
import Observability
import PostgresClient
import RedisClient
import TestSupport
import Testing

/// The `receiptfleet` binary itself: its flag, its errors, and a worker process serving metrics.
@Suite struct CommandLineTests {
    @Test func aWorkerProcessServesMetricsUntilSIGTERMThenStopsCleanly() async throws {
        try await Deployment.with { deployment in
            let worker = try FleetProcess(
                ["worker", "--concurrency", "1", "--metrics-address", "127.0.0.1:0"], environment: deployment.settings.processEnvironment)
            let url = try await waitForMetricsURL(in: worker)
            let metrics = try await fetch(url)
            #expect(metrics.status == 200)
            #expect(metrics.body.contains(#"receiptfleet_build_info{version="\#(BuildInfo.version)""#))
            #expect(metrics.body.contains("receiptfleet_jobs_processed_total"))
            #expect(try await fetch(url.replacingOccurrences(of: "/metrics", with: "/readyz")).status == 200)
            worker.send(SIGTERM)
            #expect(try await worker.exitStatus(within: .seconds(30)) == 0)
            #expect(worker.log.contains("stopped cleanly"))
        }
    }

    @Test func theRelayAndAPeriodicSchedulerServeMetricsUntilSIGTERM() async throws {
        try await Deployment.with(receipts: 4) { deployment in
            let environment = deployment.settings.processEnvironment
            let scheduler = try FleetProcess(["schedule", "--every", "3600", "--metrics-address", "127.0.0.1:0"], environment: environment)
            let relay = try FleetProcess(["relay", "--metrics-address", "127.0.0.1:0"], environment: environment)

            let schedulerURL = try await waitForMetricsURL(in: scheduler)
            let subscriptions = Double(deployment.receipts.flatMap(\.subscriptions).count)
            var scrape = Scrape(try await fetch(schedulerURL).body)
            // The pass counts its jobs page by page, and records its success at its end.
            try await eventually(every: .milliseconds(200)) {
                scrape = Scrape(try await fetch(schedulerURL).body)
                return scrape.value("receiptfleet_scheduler_last_success_timestamp_seconds") != 0
            }
            #expect(scrape.value("receiptfleet_scheduler_jobs_enqueued_total") == subscriptions, "the first pass enqueued every subscription")
            #expect((scrape.value("receiptfleet_scheduler_last_success_timestamp_seconds") ?? 0) > 0)

            let relayScrape = Scrape(try await fetch(try await waitForMetricsURL(in: relay)).body)
            #expect(relayScrape.value("receiptfleet_events_published_total", ["sink": "stream"]) == 0)
            #expect(relayScrape.value("receiptfleet_jobs", ["state": "ready"]) == subscriptions, "the same truth from every process")

            for process in [scheduler, relay] {
                process.send(SIGTERM)
                #expect(try await process.exitStatus(within: .seconds(30)) == 0, "\(process.log)")
            }
            #expect(scheduler.log.contains("scheduler stopped"))
        }
    }

    @Test func aTakenMetricsPortStopsTheWorkerWithAClearMessage() async throws {
        try await Deployment.with { deployment in
            try await withMetricsServer(deployment.settings) { taken in
                let (status, output) = try await runFleetCommand(
                    ["worker", "--metrics-address", "\(taken.address)"], environment: deployment.settings.processEnvironment)
                #expect(status != 0)
                #expect(output.contains("cannot serve metrics on \(taken.address)") && output.contains("in use"), "\(output)")
                #expect(output.contains("--metrics-address"))
            }
        }
    }

    @Test func configCheckShowsAndChecksTheMetricsAddress() async throws {
        // An empty variable counts as unset.
        let standard = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_METRICS_ADDRESS": ""])
        #expect(standard.status == 0)
        #expect(standard.output.contains("127.0.0.1:9464 (/metrics, /healthz, /readyz)   (default)"))

        let off = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_METRICS_ADDRESS": "off"])
        #expect(off.output.contains("off   (environment RECEIPTFLEET_METRICS_ADDRESS)"))

        let file = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("metrics-config") + ".json")
        try Data(#"{"metrics-address": "[::1]:9500"}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try await runFleetCommand(
            ["config", "check", "--config", file.path], environment: ["RECEIPTFLEET_METRICS_ADDRESS": ""])
        #expect(fromFile.output.contains("[::1]:9500 (/metrics, /healthz, /readyz)   (file)"))

        let bad = try await runFleetCommand(["config", "check", "--metrics-address", "127.0.0.1"], environment: [:])
        #expect(bad.status != 0)
        #expect(bad.output.contains("configuration 'metrics-address' (from flag --metrics-address): '127.0.0.1' is not HOST:PORT"))
    }

    /// A rotation: the new secret first, the previous one after it; never three, never shown.
    @Test func configCheckShowsASharedSecretRotationAndRefusesThreeSecrets() async throws {
        let rotating = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_SHARED_SECRET": "new-one,old-one"])
        #expect(rotating.status == 0 && rotating.output.contains("rotating: the previous secret is accepted too"), "\(rotating.output)")
        #expect(!rotating.output.contains("new-one") && !rotating.output.contains("old-one"))
        let three = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_SHARED_SECRET": "a,b,c"])
        #expect(three.status != 0 && three.output.contains("it holds 3 secrets: one, or two during a rotation"), "\(three.output)")
    }

    /// The apps file: each app listed with its bundle ids and which secret it uses (never the
    /// secret); a file that cannot be an apps file says what is wrong with it.
    @Test func configCheckListsTheAppsOfTheAppsFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("apps"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("journal.secret")
        try Data("journal-new\njournal-old\n".utf8).write(to: secret)
        let apps = directory.appendingPathComponent("apps.json")
        try Data(#"{"demo": {"bundle_ids": ["com.receiptfleet.demo"]}, "journal": {"bundle_ids": ["com.receiptfleet.journal"], "shared_secret_file": "\#(secret.path)", "apple_id": 42, "refund_preference": "grant-prorated"}}"#.utf8).write(to: apps)
        let listed = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_APPS_FILE": apps.path])
        #expect(listed.status == 0, "\(listed.output)")
        #expect(listed.output.contains("  app demo".padding(toLength: 30, withPad: " ", startingAt: 0) + "com.receiptfleet.demo; the account's shared secret"))
        #expect(listed.output.contains("com.receiptfleet.journal; its own shared secret (masked); rotating"), "\(listed.output)")
        #expect(listed.output.contains("; Apple id 42; refund preference grant-prorated"), "\(listed.output)")
        #expect(!listed.output.contains("com.receiptfleet.demo; the account's shared secret; refund preference"), "none unless set")
        #expect(!listed.output.contains("journal-new") && !listed.output.contains("journal-old"))

        try Data(#"{"demo": {"bundle_ids": ["com.receiptfleet.demo"]}, "other": {"bundle_ids": ["com.receiptfleet.demo"]}}"#.utf8).write(to: apps)
        let shared = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_APPS_FILE": apps.path])
        #expect(shared.status != 0 && shared.output.contains("the bundle id com.receiptfleet.demo belongs to both demo and other"), "\(shared.output)")
        try Data(#"{"demo": {"bundle_id": "com.receiptfleet.demo"}}"#.utf8).write(to: apps)
        let misspelt = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_APPS_FILE": apps.path])
        #expect(misspelt.status != 0 && misspelt.output.contains("demo has unknown fields bundle_id"), "\(misspelt.output)")
        try Data(#"{"demo": {"bundle_ids": ["com.receiptfleet.demo"], "refund_preference": "maybe"}}"#.utf8).write(to: apps)
        let preference = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_APPS_FILE": apps.path])
        #expect(preference.status != 0 && preference.output.contains("demo's refund_preference must be decline, grant-full or grant-prorated"),
                "\(preference.output)")
        // One app without a file: the setting.
        let single = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_REFUND_PREFERENCE": "decline"])
        #expect(single.status == 0 && single.output.contains("refund-preference             decline"), "\(single.output)")
        let refused = try await runFleetCommand(["config", "check"], environment: ["RECEIPTFLEET_REFUND_PREFERENCE": "refuse"])
        #expect(refused.status != 0 && refused.output.contains("'refuse' is not decline, grant-full or grant-prorated"), "\(refused.output)")
    }

    /// Seed lines of two apps' receipts go to the app of their bundle id; a line of a bundle id
    /// no app has is reported by number, the rest kept.
    @Test func importFindsEachLinesAppByItsBundleID() async throws {
        try await Deployment.with { deployment in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("import"))
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let apps = directory.appendingPathComponent("apps.json")
            try Data(#"{"demo": {"bundle_ids": ["\#(Catalog.bundleIDs[0])"]}, "journal": {"bundle_ids": ["\#(Catalog.bundleIDs[1])"]}}"#.utf8)
                .write(to: apps)
            let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
            let truths = (SimulatedReceipt.fleet(count: 3, seed: 21, anchorMs: nowMs) + SimulatedReceipt.fleet(count: 2, seed: 22, anchorMs: nowMs, app: 1))
                .flatMap(\.subscriptions).map { $0.groundTruth(at: nowMs) }
            var lines = try truths.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
            lines.append(#"{"original_transaction_id": "9", "receipt": "cmVjZWlwdA==", "bundle_id": "com.example.other"}"#)
            let file = directory.appendingPathComponent("seed.jsonl")
            try Data(lines.joined(separator: "\n").utf8).write(to: file)

            let imported = try await runFleetCommand(
                ["subscriptions", "import", file.path],
                environment: deployment.settings.processEnvironment.merging(["RECEIPTFLEET_APPS_FILE": apps.path]) { $1 })
            #expect(imported.status == 2, "\(imported.output)")
            #expect(imported.output.contains("line \(lines.count): the bundle id com.example.other is no app's"), "\(imported.output)")
            let byApp = try await onOwnThread {
                try deployment.database.connect().query("SELECT app, count(*) AS n FROM subscriptions GROUP BY app ORDER BY app")
                    .map { "\(try $0["app"].text() ?? "") \(try $0["n"].int64() ?? 0)" }
            }
            let expected = Dictionary(grouping: truths, by: \.bundleID).mapValues(\.count)
            #expect(byApp == ["demo \(expected[Catalog.bundleIDs[0]] ?? 0)", "journal \(expected[Catalog.bundleIDs[1]] ?? 0)"])

            // `status` splits the fleet by app.
            let status = try await runFleetCommand(
                ["status"], environment: deployment.settings.processEnvironment.merging(["RECEIPTFLEET_APPS_FILE": apps.path]) { $1 })
            #expect(status.status == 0, "\(status.output)")
            #expect(status.output.contains("app journal".padding(toLength: 14, withPad: " ", startingAt: 0)
                + "0 verified in the last minute; unverified \(expected[Catalog.bundleIDs[1]] ?? 0)"), "\(status.output)")
        }
    }

    /// A line with a NUL, or that is not UTF-8, is one bad line: reported by its number, the good
    /// lines imported (a NUL aborted the whole import in PostgreSQL, and bad UTF-8 anywhere read as
    /// a wrong path).
    @Test func importReportsUnreadableLinesByNumberAndKeepsTheGoodOnes() async throws {
        try await Deployment.with { deployment in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("import") + ".jsonl")
            defer { try? FileManager.default.removeItem(at: file) }
            var bytes = Array(#"{"original_transaction_id": "1", "receipt": "cmVjZWlwdA=="}"#.utf8) + [0x0A]
            bytes += Array(#"{"original_transaction_id": "2\u0000", "receipt": "cmVjZWlwdA=="}"#.utf8) + [0x0A]
            bytes += Array(#"{"original_transaction_id": "3", "receipt": "cmVj"#.utf8) + [0xFF, 0xFE] + Array(#"ZWlwdA=="}"#.utf8) + [0x0A]
            bytes += Array(#"{"original_transaction_id": "4", "receipt": "cmVjZWlwdA=="}"#.utf8) + [0x0A]
            try Data(bytes).write(to: file)
            let imported = try await runFleetCommand(["subscriptions", "import", file.path], environment: deployment.settings.processEnvironment)
            #expect(imported.status == 2, "\(imported.output)")
            #expect(imported.output.contains("line 2: a field holds a control character"), "\(imported.output)")
            #expect(imported.output.contains("line 3: not UTF-8 text"), "\(imported.output)")
            #expect(imported.output.contains("Added 2, already present 0, bad lines 2."), "\(imported.output)")
            let ids = try await onOwnThread {
                try deployment.database.connect().query("SELECT original_transaction_id AS id FROM subscriptions ORDER BY 1")
                    .map { try $0["id"].text() ?? "" }
            }
            #expect(ids == ["1", "4"])
        }
    }

    @Test func theCallTimeoutsAreShownCheckedAndReachTheClients() async throws {
        let shown = try await runFleetCommand(
            ["config", "check", "--redis-timeout", "2.5"], environment: ["RECEIPTFLEET_POSTGRES_TIMEOUT": "4"])
        #expect(shown.output.contains("redis-timeout".padding(toLength: 30, withPad: " ", startingAt: 0) + "2.5 seconds   (flag --redis-timeout)"), "\(shown.output)")
        #expect(shown.output.contains("postgres-timeout".padding(toLength: 30, withPad: " ", startingAt: 0) + "4.0 seconds   (environment RECEIPTFLEET_POSTGRES_TIMEOUT)"))
        let standard = try await runFleetCommand(["config", "check"], environment: [:])
        #expect(standard.output.contains("postgres-timeout".padding(toLength: 30, withPad: " ", startingAt: 0) + "10.0 seconds   (default)"), "\(standard.output)")

        let bad = try await runFleetCommand(["config", "check", "--postgres-timeout", "0"], environment: [:])
        #expect(bad.status != 0)
        #expect(bad.output.contains("configuration 'postgres-timeout' (from flag --postgres-timeout)"))

        let settings = try FleetSettings.forTest(
            redisURL: TestServers.redisURL, postgresURL: TestServers.postgresURL, rateLimit: try RateLimit(perSecond: 1, burst: 1),
            redisTimeout: .seconds(3), postgresTimeout: .seconds(4))
        #expect(try settings.redisConfiguration().commandTimeout == .seconds(3))
        #expect(try settings.postgresConfiguration().callTimeout == .seconds(4))
        // The relay's own session (behind PgBouncer, a direct one) keeps the same deadline.
        var behindPgBouncer = settings
        behindPgBouncer.relayPostgresURL = "postgresql://u@db-direct/x"
        #expect(try behindPgBouncer.relayPostgresConfiguration().callTimeout == .seconds(4))
        #expect(try behindPgBouncer.relayPostgresConfiguration().description.contains("db-direct"))
        #expect(try settings.relayPostgresConfiguration().description == settings.postgresConfiguration().description)
    }

    @Test func configCheckWarnsWhenTheVisibilityTimeoutIsShortForTheRedisTimeout() async throws {
        let short = try await runFleetCommand(["config", "check", "--visibility-timeout", "20"], environment: [:])
        #expect(short.status == 0, "a warning, not an error")
        #expect(short.output.contains(
            "warning: visibility-timeout (20.0 seconds) is shorter than 3 × redis-timeout (30.0 seconds)"), "\(short.output)")
        for fits in [["--visibility-timeout", "30"], ["--visibility-timeout", "20", "--redis-timeout", "6.5"]] {
            let output = try await runFleetCommand(["config", "check"] + fits, environment: [:]).output
            #expect(!output.contains("visibility-timeout ("), "\(fits): \(output)")
        }
    }

    @Test func configCheckShowsAndChecksTheTransportHaltAndTheAppleCAFile() async throws {
        func key(_ name: String) -> String { name.padding(toLength: 30, withPad: " ", startingAt: 0) }
        let standard = try await runFleetCommand(["config", "check"], environment: [:])
        #expect(standard.output.contains(key("halt-after-transport-failures") + "600 s of calls all failing"), "\(standard.output)")
        #expect(standard.output.contains(key("apple-ca-file") + "none (the system's CAs verify Apple)   (default)"))

        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("ca") + ".pem")
        try Data("-----BEGIN CERTIFICATE-----\n".utf8).write(to: caFile)
        defer { try? FileManager.default.removeItem(at: caFile) }
        let set = try await runFleetCommand(
            ["config", "check", "--halt-after-transport-failures", "120"], environment: ["RECEIPTFLEET_APPLE_CA_FILE": caFile.path])
        #expect(set.status == 0, "\(set.output)")
        #expect(set.output.contains(key("halt-after-transport-failures") + "120 s of calls"))
        #expect(set.output.contains("(flag --halt-after-transport-failures)"))
        #expect(set.output.contains(key("apple-ca-file") + "\(caFile.path)   (environment RECEIPTFLEET_APPLE_CA_FILE)"))

        // Shorter than a few pauses, the streak would lapse between probes and never halt.
        let short = try await runFleetCommand(["config", "check", "--halt-after-transport-failures", "5"], environment: [:])
        #expect(short.status != 0)
        #expect(short.output.contains(
            "configuration 'halt-after-transport-failures' (from flag --halt-after-transport-failures): '5' is not a whole number of seconds from 30 to 86400"))
        let missing = try await runFleetCommand(["config", "check", "--apple-ca-file", "/nonexistent/ca.pem"], environment: [:])
        #expect(missing.status != 0)
        #expect(missing.output.contains("configuration 'apple-ca-file' (from flag --apple-ca-file): cannot read /nonexistent/ca.pem"))
    }

    @Test func configCheckPrintsNoPassword() async throws {
        let urls = try await runFleetCommand(
            ["config", "check", "--redis-url", "rediss://worker:r3dis-secret@cache.internal:6380/1"],
            environment: [
                "RECEIPTFLEET_POSTGRES_URL": "postgresql://u@db/x?sslmode=require&password=S3cret",
                "RECEIPTFLEET_RELAY_POSTGRES_URL": "postgresql://u:S3cret@db-direct/x",
            ])
        #expect(urls.status == 0, "\(urls.output)")
        #expect(urls.output.contains("postgresql://u:***@db-direct/x   (environment RECEIPTFLEET_RELAY_POSTGRES_URL)"))
        #expect(urls.output.contains("rediss://worker:***@cache.internal:6380/1   (flag --redis-url)"))
        #expect(urls.output.contains("postgresql://u@db/x?sslmode=***&password=***   (environment RECEIPTFLEET_POSTGRES_URL)"))

        let conninfo = try await runFleetCommand(
            ["config", "check", "--postgres-url", #"host=db password = 'two words \'quoted\'' dbname=x"#], environment: [:])
        #expect(conninfo.status == 0, "\(conninfo.output)")
        #expect(conninfo.output.contains("host=db password = *** dbname=x   (flag --postgres-url)"))
        // The test servers' own URLs, from the environment, are masked too.
        let secrets = ["r3dis-secret", "S3cret", "words", "quoted"]
            + [TestServers.redisURL, TestServers.postgresURL].compactMap { URLComponents(string: $0)?.password }
        for output in [urls.output, conninfo.output] {
            #expect(!secrets.contains { output.contains($0) }, "\(output)")
        }
    }

    /// The forms issue 23 found printed in full: a raw `?` or `#` in a password (libpq and psql
    /// take it), and query secrets under other names than `password`.
    @Test func configCheckMasksRawPasswordsAndQuerySecretsOfAnyName() async throws {
        let check = try await runFleetCommand(
            ["config", "check", "--redis-url", "redis://:cache#Secret1@127.0.0.1:6379/0",
             "--appstore-production-url", "https://proxy.internal/verifyReceipt?token=Secret2"],
            environment: [
                "RECEIPTFLEET_POSTGRES_URL": "postgresql://u:pa?Secret3@db/x?sslmode=require",
                "RECEIPTFLEET_RELAY_POSTGRES_URL": "postgresql://u:pa#Secret4@db-direct/x",
                "RECEIPTFLEET_SERVER_API_PRODUCTION_URL": "https://gateway.internal/api?api_key=Secret5&region=eu",
            ])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("redis://:***@127.0.0.1:6379/0   (flag --redis-url)"))
        #expect(check.output.contains("https://proxy.internal/verifyReceipt?token=***   (flag --appstore-production-url)"))
        #expect(check.output.contains("postgresql://u:***@db/x?sslmode=***   (environment RECEIPTFLEET_POSTGRES_URL)"))
        #expect(check.output.contains("postgresql://u:***@db-direct/x   (environment RECEIPTFLEET_RELAY_POSTGRES_URL)"))
        #expect(check.output.contains("https://gateway.internal/api?api_key=***&region=***"))
        #expect(!check.output.contains("Secret"), "\(check.output)")
    }

    /// API tokens do not open the console: one token given to both doors is refused.
    @Test func aTokenGivenAsBothAnAPIAndAConsoleTokenIsRefused() async throws {
        let shared = "0123456789abcdef0123456789abcdef"
        let both = try await runFleetCommand(["config", "check"], environment: [
            "RECEIPTFLEET_API_TOKENS": "backend:\(shared)", "RECEIPTFLEET_CONSOLE_TOKENS": "alice:fedcba9876543210fedcba9876543210,bob:\(shared)",
        ])
        #expect(both.status != 0)
        #expect(both.output.contains("configuration 'console-tokens' (from environment RECEIPTFLEET_CONSOLE_TOKENS): "
            + "a console token is also an API token"), "\(both.output)")
        #expect(!both.output.contains(shared))
        let apart = try await runFleetCommand(["config", "check"], environment: [
            "RECEIPTFLEET_API_TOKENS": "backend:\(shared),analytics(read):abcdefabcdefabcdef01",
            "RECEIPTFLEET_CONSOLE_TOKENS": "alice:fedcba9876543210fedcba9876543210",
        ])
        #expect(apart.status == 0, "\(apart.output)")
        // Issue 23's scopes: a token written without any may do everything, which config check says.
        #expect(apart.output.contains("warning: the API tokens of backend name no scopes"), "\(apart.output)")
    }

    /// Behind a TLS proxy the console's cookie should be Secure: config check says so when it is not.
    @Test func configCheckWarnsOfAnInsecureConsoleCookieBehindTrustedProxies() async throws {
        let environment = ["RECEIPTFLEET_CONSOLE_TOKENS": "alice:fedcba9876543210fedcba9876543210", "RECEIPTFLEET_TRUSTED_PROXIES": "10.0.0.0/8"]
        let insecure = try await runFleetCommand(["config", "check"], environment: environment)
        #expect(insecure.status == 0)
        #expect(insecure.output.contains("warning: trusted-proxies is set") && insecure.output.contains("console-secure-cookies=true"))
        let secure = try await runFleetCommand(
            ["config", "check"], environment: environment.merging(["RECEIPTFLEET_CONSOLE_SECURE_COOKIES": "true"]) { $1 })
        #expect(secure.status == 0)
        #expect(!secure.output.contains("warning: trusted-proxies is set"))
    }

    @Test func configCheckShowsAndChecksTheWebhookThreadsAndTheirCapPerEndpoint() async throws {
        let standard = try await runFleetCommand(["config", "check"], environment: [:])
        #expect(standard.status == 0)
        #expect(standard.output.contains("webhook-threads" + String(repeating: " ", count: 15) + "8   (default)"))
        #expect(standard.output.contains("2 in flight per endpoint   (default)"))

        let set = try await runFleetCommand(
            ["config", "check", "--webhook-threads", "16"], environment: ["RECEIPTFLEET_WEBHOOK_ENDPOINT_CONCURRENCY": "4"])
        #expect(set.output.contains("16   (flag --webhook-threads)"))
        #expect(set.output.contains("4 in flight per endpoint   (environment RECEIPTFLEET_WEBHOOK_ENDPOINT_CONCURRENCY)"))

        // A cap of every thread would let one receiver that never answers stall all deliveries.
        let bad = try await runFleetCommand(
            ["config", "check", "--webhook-threads", "4", "--webhook-endpoint-concurrency", "4"], environment: [:])
        #expect(bad.status != 0)
        #expect(bad.output.contains(
            "configuration 'webhook-endpoint-concurrency' (from flag --webhook-endpoint-concurrency): '4' is not a whole number from 1 to webhook-threads − 1 (3)"))
    }

    @Test func metricsAddressesAreReadStrictly() throws {
        #expect(try MetricsAddress.parse("0.0.0.0:9464") == MetricsAddress(host: "0.0.0.0", port: 9464))
        #expect(try MetricsAddress.parse("metrics.internal:0") == MetricsAddress(host: "metrics.internal", port: 0))
        #expect(try MetricsAddress.parse("[::1]:9464") == MetricsAddress(host: "::1", port: 9464))
        #expect(try MetricsAddress.parse("[::1]:9464")?.description == "[::1]:9464")
        #expect(try MetricsAddress.parse("OFF") == nil)
        for bad in ["9464", ":9464", "localhost:", "localhost:65536", "localhost:-1", "::1:9464", "localhost:http"] {
            #expect(throws: MetricsAddressError.self, "\(bad)") { try MetricsAddress.parse(bad) }
        }
    }

    /// The URL a process logs once its metrics server listens (within 30 s).
    private func waitForMetricsURL(in process: FleetProcess) async throws -> String {
        var url: String?
        try await eventually(every: .milliseconds(100)) {
            url = process.log.firstMatch(of: /http:\/\/127\.0\.0\.1:\d+\/metrics/).map { String($0.output) }
            return url != nil
        }
        guard let url else { throw Timeout(what: "the metrics URL in the log: \(process.log)") }
        return url
    }
}

/// The operator's commands leave an audit trail, as the OS user who ran them.
@Suite struct AuditCommandTests {
    @Test func operatorCommandsAreRecordedAndAuditListsThem() async throws {
        try await Deployment.with { deployment in
            let environment = deployment.settings.processEnvironment.merging(["RECEIPTFLEET_METRICS_ADDRESS": "off"]) { $1 }
            func receiptfleet(_ arguments: String...) async throws -> (status: Int32, output: String) {
                try await runFleetCommand(arguments, environment: environment)
            }
            #expect(try await receiptfleet("pause", "--reason", "database maintenance").status == 0)
            #expect(try await receiptfleet("resume").status == 0)
            let added = try await receiptfleet("webhooks", "add", "http://127.0.0.1:9/hooks?tenant=abc", "--events", "renewed")
            #expect(added.status == 0, "\(added.output)")
            #expect(try await receiptfleet("webhooks", "disable", "424242").status != 0, "no such endpoint")
            #expect(try await receiptfleet("dead", "purge", "--error-class", "apple.21010").status == 0)

            let listed = try await receiptfleet("audit", "--json")
            #expect(listed.status == 0, "\(listed.output)")
            let entries = listed.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(entries.map { $0["action"] as? String } == ["dead.purge", "webhooks.disable", "webhooks.add", "fleet.resume", "fleet.pause"])
            let user = getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? ""
            #expect(entries.allSatisfy { $0["via"] as? String == "cli" && ($0["actor"] as? String)?.hasPrefix(user) == true })
            #expect((entries[4]["details"] as? [String: String])?["reason"] == "database maintenance")
            #expect(entries[3]["outcome"] as? String == "ok")
            #expect((entries[1]["outcome"] as? String)?.hasPrefix("failed: ") == true)
            #expect(entries[2]["target"] as? String == "http://127.0.0.1:9/hooks?…", "the query (a token, often) is left out")
            #expect(entries[0]["target"] as? String == "error-class=apple.21010" && (entries[0]["details"] as? [String: String])?["purged"] == "0")
            #expect(!listed.output.contains("whsec_"), "a webhook's signing secret is never recorded")

            let table = try await receiptfleet("audit", "--action", "fleet")
            #expect(table.output.contains("fleet.pause") && table.output.contains("fleet.resume") && !table.output.contains("webhooks"))
            let replayed = try await receiptfleet("webhooks", "replay", "1", "--since", "2026-01-01", "--event-type", "refunded")
            #expect(replayed.status == 0 && replayed.output.contains("Queued 0 deliveries to endpoint 1"), "\(replayed.output)")
            let replay = try await receiptfleet("audit", "--action", "webhooks.replay", "--json")
            #expect(replay.output.contains(#""action":"webhooks.replay""#) && replay.output.contains(#""event_types":"refunded""#))
            let retention = try await runFleetCommand(
                ["config", "check"], environment: environment.merging(["RECEIPTFLEET_EVENTS_STREAM_RETENTION_DAYS": "30"]) { $1 })
            #expect(retention.output.contains("events-stream-retention-days  30.0"), "\(retention.output)")
            let wrong = try await receiptfleet("audit", "--since", "yesterday-ish")
            #expect(wrong.status != 0 && wrong.output.contains("--since 'yesterday-ish' is neither a day"))
        }
    }
}

/// Every process starts without OpenSSL's exit handler (`CLibraries.prepare`): it freed OpenSSL's
/// global state while a lane's thread that had just closed its connections freed its own, and a
/// `notifications recover` aborted with a corrupt heap. A preloaded shim lists the exit handlers
/// a command registers.
@Suite struct ProcessExitTests {
    /// Logs the name of each function registered to run at exit, then registers it.
    static let shim = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdio.h>
        #include <unistd.h>
        int __cxa_atexit(void (*function)(void *), void *argument, void *dso) {
            int (*next)(void (*)(void *), void *, void *) = dlsym(RTLD_NEXT, "__cxa_atexit");
            Dl_info info;
            if (dladdr((void *)function, &info) && info.dli_sname) {
                char line[256];
                int length = snprintf(line, sizeof line, "at exit: %s\\n", info.dli_sname);
                if (length > 0) write(2, line, (size_t)length);
            }
            return next(function, argument, dso);
        }
        """

    @Test func openSSLDoesNotCleanUpAtExit() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(uniqueName("atexit"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (source, library) = (directory.appendingPathComponent("shim.c"), directory.appendingPathComponent("shim.so"))
        try Self.shim.write(to: source, atomically: true, encoding: .utf8)
        // The Swift toolchain's own C compiler, always beside swift.
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["clang", "-shared", "-fPIC", "-o", library.path, source.path, "-ldl"]
        try compiler.run()
        compiler.waitUntilExit()
        try #require(compiler.terminationStatus == 0, "clang could not build the shim")

        try await Deployment.with { deployment in
            // migrate connects to PostgreSQL, whose password exchange draws OpenSSL's random numbers.
            let environment = deployment.settings.processEnvironment.merging(
                ["RECEIPTFLEET_METRICS_ADDRESS": "off", "LD_PRELOAD": library.path]) { $1 }
            let migrated = try await runFleetCommand(["migrate"], environment: environment)
            #expect(migrated.status == 0, "\(migrated.output)")
            #expect(migrated.output.contains("at exit: "), "the shim sees the exit handlers (libstdc++'s, at least)")
            #expect(!migrated.output.contains("at exit: OPENSSL_cleanup"), "\(migrated.output)")
        }
    }
}
