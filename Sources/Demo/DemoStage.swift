import AppStore
import AppStoreSimulator
import ArgumentParser
import EventRelay
import Fleet
import FleetConfiguration
import Foundation
import HTTPClient
import JobQueue
import Lanes
import Ledger
import Operations
import PostgresClient
import RedisClient
import Terminal

/// What `receiptfleet demo` starts and owns: its database, its Redis keys, the simulator and the
/// fleet's processes. `stopAll` ends every process it started.
final class DemoStage {
    static let keyPrefix = "{rfdemo}"
    static let database = "receiptfleet_demo"
    /// Where `backup-restore` restores the demo's database to.
    static let restoredDatabase = "receiptfleet_demo_restored"
    static let sharedSecret = "demo-shared-secret"
    /// Seals the demo's webhook secrets: fresh for each demo, as its database is.
    let webhookSecretKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()

    /// The demo's own deployment: its database, prefix and simulator. A restore (`backup-restore`)
    /// points it at the restored database.
    var settings: FleetSettings
    let serverPostgres: PostgresConfiguration
    var demoPostgres: PostgresConfiguration
    let simulatorBase: String
    let simulatorPort: Int
    let logDirectory: URL
    /// Set by SIGINT or SIGTERM: the demo stops between steps and stops what it started.
    private let interrupted: StopSignal
    /// The shell command that restarts a server, for the restart faults.
    var restartCommand: String?
    /// What a fault's steps measured (a backup's size, a restore's time), for the report.
    var faultFigures: [String: String] = [:]
    /// What the notification-outage fault found wrong: a notification not recovered, or twice.
    var notificationProblem: String?
    /// The file holding a server's process id, for the freeze faults.
    var serverPIDFile: String?
    /// The first worker's metrics port (`demo --metrics-port`); the others take the next ports.
    var metricsPort = 9464
    /// The processes it started, by name, with what they were started with (to start them again).
    var children: [(name: String, arguments: [String], environment: SettingValues, process: Process)] = []
    /// The nights run so far: name and the jobs its first pass enqueued.
    private var nights: [(runID: String, enqueued: Int)] = []
    /// The passes of the night in hand (an operator's `schedule` adds one): their tallies add up to the night's.
    private var passes: [String] = []
    private var ownQueue: JobQueue?
    private var fleet: [SimulatedSubscription] = []
    var fleetSize: Int { fleet.count }
    /// The receipts drawn (`demo --subscriptions`), and the subscriptions the ledger held on night 1.
    private var receipts = 0
    private var firstNightSubscriptions = 0
    /// The moment the simulated lifecycles are centred on, in whole seconds (the simulator's Server
    /// API draws the same fleet from it).
    let anchor = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    static let fleetSeed: UInt64 = 42
    /// Where the Server API's key and the simulator's root are written, when the demo uses it.
    var serverAPIFiles: (key: URL, root: URL) { Self.serverAPIFiles(in: logDirectory) }
    static func serverAPIFiles(in directory: URL) -> (key: URL, root: URL) {
        (directory.appendingPathComponent("AuthKey_DEMOKEY.p8"), directory.appendingPathComponent("simulator-root.pem"))
    }

    init(
        configured: FleetSettings, rateLimit: Double, simulatorPort: Int, logDirectory: String, backend: VerificationBackend,
        interrupted: StopSignal
    ) throws {
        serverPostgres = try configured.postgresConfiguration()
        demoPostgres = serverPostgres.database(Self.database)
        self.simulatorPort = simulatorPort
        simulatorBase = "http://127.0.0.1:\(simulatorPort)"
        self.logDirectory = URL(fileURLWithPath: logDirectory)
        self.interrupted = interrupted
        var settings = configured
        settings.postgresURL = demoPostgres.unmaskedConnectionString
        settings.relayPostgresURL = try configured.relayPostgresURL.map {
            try PostgresConfiguration($0).database(Self.database).unmaskedConnectionString
        }
        settings.keyPrefix = Self.keyPrefix
        settings.endpoints = AppStoreEndpoints(production: simulatorBase + "/verifyReceipt", sandbox: simulatorBase + "/sandbox/verifyReceipt")
        settings.sharedSecret = SharedSecret(Self.sharedSecret)
        settings.rateLimit = try RateLimit(perSecond: rateLimit, burst: configured.rateLimit.burst)
        // Short retries, so the demo does not wait long on the receipts Apple cannot read (21002).
        settings.retryPolicy = try RetryPolicy(base: .seconds(1), cap: .seconds(4), maxAttempts: 4)
        settings.defaultBackend = backend
        if backend == .serverAPI {
            try FileManager.default.createDirectory(at: self.logDirectory, withIntermediateDirectories: true)
            settings.serverAPI = try Self.serverAPISettings(files: Self.serverAPIFiles(in: self.logDirectory), simulatorBase: simulatorBase)
        }
        settings.apps = Self.twoApps
        self.settings = settings
    }

    /// A fresh database and no keys left from an earlier demo.
    func prepare() throws {
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        let server = try PostgresConnection(configuration: serverPostgres)
        for database in [Self.database, Self.restoredDatabase] { try drop(database, on: server) }
        _ = try server.query("CREATE DATABASE \(Self.database)")
        try Migrator.migrate(try PostgresConnection(configuration: demoPostgres))
        try RedisConnection(settings.redisConfiguration()).deleteKeys(prefixed: Self.keyPrefix)
        try writeAppsFile()
    }

    /// Drops `database` if it exists, ending its sessions. FORCE cannot end an autovacuum worker (it
    /// runs as a superuser) busy with its tables; such a worker gives up soon, so try a few times.
    func drop(_ database: String, on server: PostgresConnection) throws {
        for attempt in 1...10 {
            do {
                _ = try server.query("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
                return
            } catch let error as PostgresError where error.sqlState == "42501" && attempt < 10 {
                try pause(.seconds(1))
            }
        }
    }

    /// Starts the simulator with its clock at `clock`, for a fleet of `fleetSize` receipts (its
    /// Server API's notification history), and waits until it answers.
    func startSimulator(clockAt clock: Date, latency: String, fleetSize: Int) throws {
        try start("simulator", [
            "simulate-appstore", "serve", "--port", "\(simulatorPort)", "--start", clock.formatted(.iso8601),
            "--latency", latency, "--shared-secret", Self.sharedSecret, "--stats-interval", "0",
        ] + (settings.serverAPI == nil ? [] : [
            "--server-api-key", serverAPIFiles.key.path, "--fleet-seed", "\(Self.fleetSeed)", "--fleet-seed", "\(Self.journalSeed)",
            "--fleet-at", anchor.formatted(.iso8601),
        ] + receiptCounts(fleetSize).flatMap { ["--fleet-size", "\($0)"] }))
        let http = try HTTPClient()
        for _ in 0..<100 {
            if (try? http.get(url: simulatorBase + "/stats"))?.status == 200 {
                if hasTwoApps { try control("/control/knobs", simulatorAppSecrets) }
                return
            }
            try pause(.milliseconds(100))
        }
        throw ValidationError("The simulator did not start on port \(simulatorPort); see \(logDirectory.path)/simulator.log (is the port taken? use --simulator-port).")
    }

    func setSimulatorClock(to date: Date) throws {
        try control("/control/clock", #"{"now_ms": \#(Int64(date.timeIntervalSince1970 * 1000))}"#)
    }

    /// POSTs `json` to one of the simulator's control routes.
    func control(_ path: String, _ json: String) throws {
        let response = try HTTPClient().post(url: simulatorBase + path, json: Array(json.utf8))
        guard response.status == 200 else {
            throw ValidationError("The simulator refused \(path) (HTTP \(response.status)): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    /// Draws `count` simulated receipts of every lifecycle kind (of both apps: `drawReceipts`);
    /// `addSubscriptions(boughtBy:)` then adds their subscriptions to the ledger as their customers buy them.
    func drawFleet(count: Int) {
        receipts = count
        fleet = drawReceipts(count: count).flatMap(\.subscriptions)
    }

    /// Adds the subscriptions bought by `date` and not yet added (a ledger learns of a subscription
    /// when it is bought, never before).
    func addSubscriptions(boughtBy date: Date) throws {
        let dateMs = Int64(date.timeIntervalSince1970 * 1000)
        // Each customer has an account id, as an app's back end gives one, so that the console's and the
        // CLI's account lookups have something to find: user-00001 for the fleet's first subscription.
        let bought = fleet.enumerated().filter { _, subscription in
            subscription.groundTruth(at: dateMs).status != .invalid || [.malformed, .deletedAccount].contains(subscription.receipt.kind)
        }
        let ledger = Ledger(try PostgresConnection(configuration: demoPostgres))
        let progress = ProgressLine()
        var added = 0
        for start in stride(from: 0, to: bought.count, by: 10_000) {
            let batch = bought[start..<min(start + 10_000, bought.count)].map { index, subscription in
                NewSubscription(
                    app: app(of: subscription.receipt), originalTransactionID: subscription.originalTransactionID,
                    environment: subscription.receipt.token.environment == .sandbox ? .sandbox : .production,
                    receipt: ReceiptData(base64: subscription.receipt.receiptData), accountID: Self.accountID(index))
            }
            added += try ledger.addSubscriptions(batch).inserted
            progress.show("demo: added \(start + batch.count) of \(bought.count) subscriptions")
            try checkInterrupted()
        }
        progress.finish()
        if firstNightSubscriptions == 0 {
            firstNightSubscriptions = added
            say("\(added) subscriptions in the ledger: those of \(receipts) receipts bought by a month ago "
                + "(the rest are bought during the month)")
        } else {
            say("\(added) new subscriptions in the ledger: the month's new customers")
        }
    }

    /// One night: the scheduler enqueues what is due at `now`, the workers (started now if asked)
    /// work through it, and the relay publishes its events; `fault`, if any, strikes once a third
    /// of the jobs are done. Returns the jobs and the time taken.
    /// The demo's ordinary mishap when no fault is asked for: Apple answers a third of the requests
    /// with garbage for 6 s, which the fleet retries (its 502 pages may pause it a moment). And from
    /// the night's start until 20 s after the spell, 1% of the receipts get garbage every time
    /// (`brokenReceipts`): their jobs fail each of their 4 attempts (1 + 2 + 4 s apart) and go to
    /// the dead letters, for the console's page and `dead replay` to show.
    static let garbageSpell: [(after: Duration, step: DemoFault.Step)] = [
        (.zero, .knobs(#"{"garbage_rate": 0.3}"#)), (.seconds(6), .knobs(#"{"garbage_rate": 0}"#)),
        (.seconds(20), .knobs(#"{"garbage_receipt_share": 0}"#)),
    ]
    static let brokenReceipts = #"{"garbage_receipt_share": 0.01}"#

    /// Whether the garbage spell struck: its dead letters are expected (`DemoCheck`).
    private(set) var garbageSpellStruck = false

    /// What a night came to: its jobs, how many were verified and how many died (its passes'
    /// tallies), how long it took as the demo saw it (the workers starting and the events relayed
    /// too), and as the ledger records it (its first pass's start to its last settled job).
    struct Night {
        var jobs: Int
        var verified: Int
        var dead: Int
        var seconds: Double
        var settledSeconds: Double?
    }

    func night(
        runID: String, now: Date, startingWorkers workers: Int, threads: Int, fault: (DemoFault, seconds: Double)? = nil,
        garbageSpell: Bool = false
    ) throws -> Night {
        let started = ContinuousClock.now
        let summary = try Scheduler(settings: settings).run(Scheduler.Options(night: runID), now: now)
        nights.append((runID, summary.enqueued))
        passes = [summary.passID]
        if garbageSpell { try control("/control/knobs", Self.brokenReceipts) }
        for index in 0..<workers {
            try start("worker-\(index + 1)", ["worker", "--concurrency", "\(threads)"] + (index == 0 ? ["--with-relay"] : []),
                      environment: [Settings.metricsAddress: "127.0.0.1:\(metricsPort + index)"])
        }
        var steps = fault.map { $0.0.steps(seconds: $0.seconds) } ?? (garbageSpell ? Self.garbageSpell : [])
        let mishap = fault.map { "fault \($0.0.rawValue)" } ?? "a spell of garbage answers (a third of them, for 6 s)"
        var faultStarted: ContinuousClock.Instant?
        let progress = ProgressLine()
        var last = (done: 0, at: ContinuousClock.now)
        var tally = RunTally(enqueued: summary.enqueued, verified: 0, dead: 0)
        while true {
            try pause(.milliseconds(500))
            let status: FleetStatus
            do {
                status = try FleetStatus.read(settings: settings)
            } catch {
                progress.show("demo: \(runID): cannot read the fleet's status (\(error)); retrying")
                continue
            }
            let left = status.queue.outstanding
            let done = max(0, summary.enqueued - left)
            if let reading = try? nightTally() { tally = reading }
            if !steps.isEmpty, faultStarted == nil, done * 3 >= summary.enqueued {
                faultStarted = .now
                garbageSpellStruck = fault == nil
                progress.show("demo: \(runID): \(mishap) strikes")
                progress.finish()
            }
            // A step changes the queue (a restart without data empties it, a schedule fills it):
            // the status read before it says nothing about whether the night is over.
            var acted = false
            while let begun = faultStarted, let next = steps.first, begun.duration(to: .now) >= next.after {
                try perform(steps.removeFirst().step, night: (runID, now))
                acted = true
            }
            let rate = Double(done - last.done) / max(0.001, last.at.duration(to: .now).seconds)
            last = (done, .now)
            var line = "demo: \(runID): \(done) of \(summary.enqueued) done (\(tally.verified) verified, \(tally.dead) dead), \(Int(rate))/s, "
                + "\(status.outbox.unpublished) events unpublished"
            if status.queue.pausedUntil != nil { line += ", paused: Apple unavailable" }
            if let reason = status.queue.haltedReason { line += ", HALTED: \(reason)" }
            progress.show(line)
            if left == 0 && status.outbox.unpublished == 0 && steps.isEmpty && !acted { break }
        }
        progress.finish()
        return Night(jobs: summary.enqueued, verified: tally.verified, dead: tally.dead, seconds: started.duration(to: .now).seconds,
                     settledSeconds: try settledSeconds(night: runID))
    }

    /// The night's passes' tallies together.
    private func nightTally() throws -> RunTally {
        try queue().tallies(ofRuns: passes).compactMap(\.self).reduce(RunTally(enqueued: 0, verified: 0, dead: 0)) {
            RunTally(enqueued: $0.enqueued + $1.enqueued, verified: $0.verified + $1.verified, dead: $0.dead + $1.dead)
        }
    }

    /// How long the night took as the ledger records it, once the scheduler's record is brought up
    /// to date as a pass would: from its first pass's start to its last settled job.
    private func settledSeconds(night: String) throws -> Double? {
        let ledger = Ledger(try PostgresConnection(configuration: demoPostgres))
        let queue = try queue()
        try SchedulerPasses.record(ledger: ledger, queue: queue, now: Date())
        let totals = try SchedulerPasses.nights(ledger: ledger, queue: queue, limit: 2, now: Date()).first { $0.night == night }?.totals
        return totals.flatMap { totals in totals.finishedAt.map { $0.timeIntervalSince(totals.startedAt) } }
    }

    /// The demo's queue, on a connection of its own (which reconnects by itself after a restart).
    private func queue() throws -> JobQueue {
        if let ownQueue { return ownQueue }
        let queue = try JobQueue(
            connection: RedisConnection(settings.redisConfiguration()), keys: QueueKeys(prefix: settings.keyPrefix),
            consumer: JobQueue.consumerName(thread: -6), clock: settings.scriptClock)
        ownQueue = queue
        return queue
    }

    private func perform(_ step: DemoFault.Step, night: (runID: String, now: Date)) throws {
        switch step {
        case .killWorker(let index):
            let workers = children.filter { $0.name.hasPrefix("worker-") }.count
            guard let slot = children.firstIndex(where: { $0.name == "worker-\(index % workers + 1)" }) else { return }
            let victim = children[slot]
            kill(victim.process.processIdentifier, SIGKILL)
            victim.process.waitUntilExit()
            say("SIGKILLed \(victim.name) (pid \(victim.process.processIdentifier)); starting it again")
            children.remove(at: slot)
            try start(victim.name, victim.arguments, environment: victim.environment)
        case .restartServer:
            guard let command = restartCommand else { return }
            say("restarting a server: \(command)")
            let status = runShell(command)
            guard status == 0 else { throw ValidationError("The restart command failed (exit status \(status)).") }
        case .freezeServer(let duration):
            try freezeServer(for: duration)
        case .outage(let seconds):
            say("Apple is down (21005) for \(Int(seconds)) s")
            try control("/control/outage", #"{"seconds": \#(seconds)}"#)
        case .knobs(let json):
            say("the simulator's knobs change: \(json.contains("shared_secret") ? "the shared secret" : json)")
            try control("/control/knobs", json)
        case .resumeFleet:
            say("an operator resumes the fleet")
            _ = try resumeFleet(settings: settings)
        case .backUp:
            try backUp()
        case .restore:
            try restore()
        case .schedule:
            let summary = try Scheduler(settings: settings).run(Scheduler.Options(night: night.runID), now: night.now)
            passes.append(summary.passID)
            say("an operator runs the scheduler, pass \(summary.passID): \(summary.enqueued) jobs enqueued again, "
                + "\(summary.notificationsRecovered) notifications recovered")
        }
    }

    /// Stops the server and the processes it started (PostgreSQL serves each session from a child
    /// process, which leads a process group of its own, so signalling the server's group is not
    /// enough), waits, and lets them all continue, even if the wait is cut short.
    private func freezeServer(for duration: Duration) throws {
        guard let path = serverPIDFile else { return }
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        guard let pid = text.split(whereSeparator: \.isNewline).first.flatMap({ pid_t($0) }), pid > 1 else {
            throw ValidationError("No process id in \(path).")
        }
        var stopped: [pid_t] = []
        defer {
            for process in stopped { kill(process, SIGCONT) }
            if !stopped.isEmpty { say("the server continues (SIGCONT)") }
        }
        // The server first, so that it starts no process once its children are listed.
        guard kill(pid, SIGSTOP) == 0 else { throw ValidationError("SIGSTOP to \(pid) failed: \(String(cString: strerror(errno))).") }
        stopped.append(pid)
        for child in childProcesses(of: pid) where kill(child, SIGSTOP) == 0 { stopped.append(child) }
        say("froze the server (SIGSTOP to process \(pid) and its \(stopped.count - 1) children) for \(duration)")
        try pause(duration)
    }

    /// The last nights' check against the simulator's truth.
    func check() throws -> DemoCheck {
        guard let night = nights.last else { return DemoCheck() }
        return try DemoCheck.run(
            night.runID, enqueued: night.enqueued, fleet: fleet, postgres: PostgresConnection(configuration: demoPostgres),
            queue: queue(), stream: (try RedisConnection(settings.redisConfiguration()), RelayConfiguration(keyPrefix: settings.keyPrefix).streamKey),
            garbageSpell: garbageSpellStruck)
    }

    /// A webhook endpoint for every event, delivered to the simulator's sink (a downstream system
    /// that answers 204), so that the console's webhooks page has deliveries to show.
    func addWebhookEndpoint() throws {
        let registry = WebhookRegistry(
            database: try PostgresConnection(configuration: demoPostgres), keyring: try WebhookKeyring(current: webhookSecretKey),
            allowsPrivateNetworks: true)
        _ = try registry.add(url: simulatorBase + "/sink", eventTypes: [])
        say("a webhook endpoint: every event goes to \(simulatorBase)/sink, a downstream system that answers 204")
    }

    /// What the nights did, and what Apple saw.
    func summary(nights: [(name: String, result: Night)]) throws -> String {
        let postgres = try PostgresConnection(configuration: demoPostgres)
        func table(_ sql: String) throws -> [String] {
            let rows = try postgres.query(sql).map { (try $0["k"].text() ?? "-", try $0["n"].int64() ?? 0) }
            return aligned(rows.map { ($0.0, "\($0.1)") })
        }
        var lines = ["", "== ReceiptFleet demo: \(fleet.count) subscriptions on \(receipts) receipts =="]
        lines.append("   (a few receipts hold two subscriptions; \(firstNightSubscriptions) were bought by a month ago, "
            + "the rest during the month, so night 1 sees fewer than night 2)")
        for (name, result) in nights {
            // The console's "took": the demo's own time adds the workers' start and the events' relay.
            let settled = result.settledSeconds.map { String(format: "; its last job settled %.1f s after its first pass started", $0) } ?? ""
            lines.append("night \(name): \(result.jobs) jobs in \(String(format: "%.1f", result.seconds)) s: "
                + "\(result.verified) verified, \(result.dead) dead" + settled)
        }
        lines.append("-- subscription states")
        lines += try table("SELECT status AS k, count(*) AS n FROM subscriptions GROUP BY 1 ORDER BY 2 DESC")
        lines.append("-- subscriptions by app")
        lines += try table("SELECT app AS k, count(*) AS n FROM subscriptions GROUP BY 1 ORDER BY 1")
        lines.append("-- events (published to \(Self.keyPrefix):events; night 1 only finds the receipts Apple refuses)")
        lines += try table("SELECT type AS k, count(*) AS n FROM events GROUP BY 1 ORDER BY 2 DESC")
        let stats = try JSONDecoder().decode(SimulatorStatistics.self, from: Data(HTTPClient().get(url: simulatorBase + "/stats").body))
        let deliveries = try table("SELECT state AS k, count(*) AS n FROM webhook_deliveries GROUP BY 1 ORDER BY 1")
        if !deliveries.isEmpty {
            lines.append("-- webhook deliveries to \(simulatorBase)/sink (a downstream system; pending ones go on while the fleet runs)")
            lines += deliveries
        }
        lines.append("-- what Apple (the simulator) saw")
        lines.append("  \(stats.requestsTotal) requests; at most \(stats.maxRequestsInOneSecond) in one second "
            + "against a limit of \(Int(settings.rateLimit.perSecond))/s (burst \(settings.rateLimit.burst))")
        lines.append("  by HTTP status: " + stats.byHTTPStatus.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        if !stats.byStatus.isEmpty {
            lines.append("  by verifyReceipt status:")
            lines += aligned(stats.byStatus.sorted { $0.key < $1.key }.map { ("\($0.key) \(AppleStatusMeaning.of($0.key))", "\($0.value)") })
        }
        return lines.joined(separator: "\n")
    }

    /// The account id of the fleet's subscription at `index`.
    static func accountID(_ index: Int) -> String { "user-" + String(format: "%05d", index + 1) }

    /// How to look further: commands that paste and work, while what they name still runs.
    func lookFurther(keepRunning: Bool) throws -> String {
        guard keepRunning else {
            return """
                Everything the demo started has stopped; its processes' logs are in \(logDirectory.path)/.
                To look further, run it with --keep-running: the fleet, its servers and the ops console stay up.
                """
        }
        let environment = try writeEnvironmentFile()
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let lines = [
            "Look further, while the demo runs (the file holds the demo's settings, passwords included; mode 0600):",
            "  set -a; . '\(environment)'; set +a",
            "  psql \"$\(Settings.postgresURL.variable)\"",
            "  redis-cli \(try redisCLIArguments()) XREVRANGE '\(Self.keyPrefix):events' + - COUNT 5",
            "  '\(binary)' status",
            "  '\(binary)' subscriptions show 1",
            "  '\(binary)' subscriptions show --account \(try firstAccount() ?? Self.accountID(0))",
            "  curl http://127.0.0.1:\(metricsPort)/metrics     (worker 1; the others on the next ports)",
            "  logs: \(logDirectory.path)/",
        ]
        return lines.joined(separator: "\n")
    }

    /// The account of the ledger's first subscription: one the lookups find.
    private func firstAccount() throws -> String? {
        try Ledger(try PostgresConnection(configuration: demoPostgres)).subscription(id: 1)?.accountID
    }

    /// Where redis-cli finds the demo's Redis (its password comes from the environment file).
    private func redisCLIArguments() throws -> String {
        let redis = try settings.redisConfiguration()
        let at = switch redis.endpoint {
        case .tcp(let host, let port): "-h \(host) -p \(port)"
        case .unixSocket(let path): "-s '\(path)'"
        }
        return at + (redis.username.map { " --user '\($0)'" } ?? "") + (redis.database == 0 ? "" : " -n \(redis.database)")
    }

    /// Rows of a name and a count, the counts in one column after the longest name.
    private func aligned(_ rows: [(String, String)]) -> [String] {
        let width = (rows.map(\.0.count).max() ?? 0) + 2
        return rows.map { "  " + $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + $0.1 }
    }

    /// The demo's settings as its processes read them, as `RECEIPTFLEET_*` lines a shell can source
    /// (mode 0600), for commands pasted from the summary. Returns the file's path.
    private func writeEnvironmentFile() throws -> String {
        let file = logDirectory.appendingPathComponent("env")
        // redis-cli reads its password from REDISCLI_AUTH (its -u takes no URL without a user name).
        let redisPassword = try settings.redisConfiguration().password.map { ["REDISCLI_AUTH": $0] } ?? [:]
        let text = environment.environment.merging(redisPassword) { $1 }.sorted { $0.key < $1.key }.map { "\($0.key)='\($0.value.replacingOccurrences(of: "'", with: "'\\''"))'" }
        _ = FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600])
        try Data((text.joined(separator: "\n") + "\n").utf8).write(to: file)
        return file.path
    }

    /// Asks every process it started to stop (SIGTERM: workers drain), then kills what is left.
    /// Starts the ops console on `port` with a fresh operator token, waits until it answers, and
    /// returns the token.
    func startConsole(port: Int) throws -> String {
        let token = (0..<4).map { _ in String(format: "%016llx", UInt64.random(in: 0...UInt64.max)) }.joined()
        try start("console", ["console", "--address", "127.0.0.1:\(port)"], environment: [
            Settings.consoleTokens: "demo:\(token)", Settings.metricsAddress: "127.0.0.1:0",
        ])
        let http = try HTTPClient()
        for _ in 0..<100 {
            if (try? http.get(url: "http://127.0.0.1:\(port)/console/login"))?.status == 200 { return token }
            try pause(.milliseconds(100))
        }
        throw ValidationError("The console did not start on port \(port); see \(logDirectory.path)/console.log (is the port taken? use --console-port).")
    }

    func stopAll() {
        stop(children.map(\.process))
        if !children.isEmpty { say("stopped the simulator and the fleet") }
        children = []
    }

    /// SIGTERM to `processes`, then a drain grace for them to finish, then SIGKILL to any left.
    func stop(_ processes: [Process]) {
        for process in processes where process.isRunning { process.terminate() }
        let deadline = ContinuousClock.now + settings.drainGrace + .seconds(5)
        while processes.contains(where: \.isRunning), ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.1) }
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Starts `receiptfleet arguments…` with the demo's settings; its output goes to `name`.log.
    func start(_ name: String, _ arguments: [String], environment extra: SettingValues = [:]) throws {
        let log = logDirectory.appendingPathComponent(name + ".log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment.merging(extra).environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = process.standardOutput
        try process.run()
        children.append((name, arguments, extra, process))
    }

    /// The demo's settings as the child processes read them.
    private var environment: SettingValues {
        var values: SettingValues = [
            Settings.redisURL: settings.redisURL,
            Settings.postgresURL: settings.postgresURL,
            Settings.relayPostgresURL: settings.relayPostgresURL ?? settings.postgresURL,
            Settings.keyPrefix: settings.keyPrefix,
            Settings.appstoreProductionURL: settings.endpoints.production,
            Settings.appstoreSandboxURL: settings.endpoints.sandbox,
            Settings.sharedSecret: Self.sharedSecret,
            Settings.rateLimit: "\(settings.rateLimit.perSecond)",
            Settings.rateBurst: "\(settings.rateLimit.burst)",
            Settings.visibilityTimeout: "\(settings.visibilityTimeout.components.seconds)",
            Settings.drainGrace: "\(settings.drainGrace.components.seconds)",
            Settings.redisTimeout: "\(settings.redisTimeout.seconds)",
            Settings.postgresTimeout: "\(settings.postgresTimeout.seconds)",
            Settings.retryBase: "\(settings.retryPolicy.base.seconds)",
            Settings.retryCap: "\(settings.retryPolicy.cap.seconds)",
            Settings.retryMaxAttempts: "\(settings.retryPolicy.maxAttempts)",
            Settings.webhookSecretKey: webhookSecretKey, Settings.allowPrivateWebhooks: "true",
        ]
        if hasTwoApps { values[Settings.appsFile] = appsFile.path }
        return values.merging(serverAPIEnvironment)
    }

    func pause(_ duration: Duration) throws {
        Thread.sleep(forTimeInterval: duration.seconds)
        try checkInterrupted()
    }

    private func checkInterrupted() throws {
        if interrupted.isSet {
            say("interrupted: stopping")
            throw ExitCode(130)
        }
        if let dead = children.first(where: { !$0.process.isRunning }) {
            throw ValidationError("The demo's \(dead.name) ended early (exit \(dead.process.terminationStatus)); see \(logDirectory.path)/\(dead.name).log.")
        }
    }
}

/// The processes whose parent is `parent`, read from /proc.
private func childProcesses(of parent: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { pid_t($0) }.filter { pid in
        // /proc/PID/stat: pid (command name) state ppid …; the name may hold spaces and parentheses.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let nameEnd = stat.range(of: ")", options: .backwards)
        else { return false }
        let fields = stat[nameEnd.upperBound...].split(separator: " ")
        return fields.count > 1 && pid_t(fields[1]) == parent
    }
}

/// Runs `command` with /bin/sh, its output going to standard error, and returns its wait status.
private func runShell(_ command: String) -> Int32 {
    runProgram(["/bin/sh", "-c", command])
}

/// Runs the program `words[0]` (found on PATH) with the other words as its arguments, its output
/// going to standard error, and returns its wait status. Not through Foundation's Process: its wait
/// never ends when the command leaves a daemon behind (a restarted server) that inherited the
/// process's descriptors.
func runProgram(_ words: [String]) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
    var pid: pid_t = 0
    let arguments = words.map { strdup($0) } + [nil]
    defer { arguments.forEach { free($0) } }
    guard posix_spawnp(&pid, words[0], &actions, nil, arguments, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1, errno == EINTR {}
    return status
}
