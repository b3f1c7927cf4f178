import AccessTokens
import AppStore
import AppStoreSimulator
import Console
import Fleet
import FleetConfiguration
import Foundation
import HTTPClient
import JobQueue
import Ledger
import Logging
import Operations
import PostgresClient
import RedisClient
import TestSupport

/// The ops console for one test: its own database and Redis prefix, the App Store simulator, a few
/// simulated subscriptions, and `replicas` consoles on free loopback ports, spoken to over real HTTP.
struct ConsoleHarness: Sendable {
    let database: TestDatabase
    let simulator: LiveSimulator
    let fleet: FleetSettings
    let ports: [Int]
    let operatorToken: String
    /// The first simulated receipt's subscription: monthly, renewing for ever.
    let firstOriginalTransactionID: String

    static let seed: UInt64 = 11

    /// `sampleInterval`: by default so long (11 days) that every replica's first sample falls in one bucket.
    /// `log` receives what the consoles log; `secureCookies` is the setting for consoles behind TLS.
    /// `operators` gives each replica's console tokens, from its index and ops-alice's token.
    /// `serverAPI`: the fleet reaches the simulator's App Store Server API too, with the tests' key.
    /// `consoleClock`: the clock the consoles' scripts read instead of the fleet's (Redis's): `.driven`
    /// lets a test move the consoles' "now" (`QueueKeys.drivenClock`) while the fleet's processes keep Redis's.
    static func with<T: Sendable>(
        replicas: Int = 1, sampleInterval: Duration = .seconds(1_000_000), log: CapturedLog? = nil, secureCookies: Bool = false,
        operators: (_ replica: Int, _ aliceToken: String) -> String = { "ops-alice:\($1)" },
        serverAPI: Bool = false, trustedProxies: String? = nil, consoleClock: ScriptClock? = nil,
        configureFleet: (inout FleetSettings) -> Void = { _ in },
        _ body: (ConsoleHarness) async throws -> T
    ) async throws -> T {
        // A month and more ago: the subscriptions' first verification is a baseline, the next one has news.
        let startMs = (Int64(Date().timeIntervalSince1970) - 65 * 86_400) * 1000
        return try await TestDatabase.with { database in
            try await LiveSimulator.with(
                startMs: startMs, serverAPI: SimulatedServerAPI.simulation(seed: seed, anchorMs: startMs, subscriptions: 4)
            ) { simulator in
                let receipts = SimulatedReceipt.fleet(count: 4, seed: seed, anchorMs: startMs)
                _ = try await onOwnThread {
                    let connection = try database.connect()
                    try Migrator.migrate(connection)
                    try Ledger(connection).addSubscriptions(receipts.flatMap(\.subscriptions).map(\.newSubscription))
                }
                var fleet = try FleetSettings.forTest(
                    redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("rfcon"))}",
                    endpoints: AppStoreEndpoints(production: simulator.productionURL, sandbox: simulator.sandboxURL),
                    sharedSecret: SharedSecret("console-test-secret"), rateLimit: try RateLimit(perSecond: 1_000, burst: 100),
                    concurrency: 2, visibilityTimeout: .seconds(5))
                if serverAPI { fleet.serverAPI = try SimulatedServerAPI.settings(simulator) }
                configureFleet(&fleet)
                var consoleFleet = fleet
                if let consoleClock { consoleFleet.scriptClock = consoleClock }
                let token = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
                let logger = log.map { log in Logger(label: "console-test") { _ in log.handler } } ?? Logger(label: "console-test")
                var ports: [Int] = []
                var running: [RunningServices] = []
                defer { for services in running { services.cancel() } }
                for replica in 0..<replicas {
                    var given: SettingValues = [
                        Settings.consoleTokens: operators(replica, token), Settings.consoleSecureCookies: "\(secureCookies)",
                    ]
                    given[Settings.trustedProxies] = trustedProxies
                    guard var settings = try ConsoleSettings(.given(given, command: .console)) else { throw ServerDidNotStart() }
                    settings.sampleInterval = sampleInterval
                    let (bound, listening) = AsyncStream.makeStream(of: Int.self)
                    let server = try ConsoleServer(
                        settings: settings, fleet: consoleFleet, host: "127.0.0.1", port: 0, logger: logger, onListening: { listening.yield($0) })
                    running.append(RunningServices([server, server.sampler], logger: logger))
                    guard let port = await bound.first(where: { _ in true }) else { throw ServerDidNotStart() }
                    ports.append(port)
                }
                return try await body(ConsoleHarness(
                    database: database, simulator: simulator, fleet: fleet, ports: ports, operatorToken: token,
                    firstOriginalTransactionID: receipts[0].subscriptions[0].newSubscription.originalTransactionID))
            }
        }
    }

    struct ServerDidNotStart: Error {}

    func baseURL(_ replica: Int = 0) -> String { "http://127.0.0.1:\(ports[replica])" }

    // MARK: Over HTTP

    struct Reply: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: String

        var location: String? { headers["Location"] }
        /// The session cookie's value when the answer sets one.
        var sessionCookie: String? {
            headers.fields.first { $0.name.lowercased() == "set-cookie" && $0.value.hasPrefix("rf_console=") }
                .map { String($0.value.dropFirst("rf_console=".count).prefix { $0 != ";" }) }
        }
        /// The CSRF token the page's forms carry.
        var csrf: String? {
            body.range(of: #"name="csrf" value="[0-9a-f]+""#, options: .regularExpression).map {
                String(body[$0].dropFirst(#"name="csrf" value=""#.count).dropLast())
            }
        }

        /// The HTML of the `<section>` with this id, if the page has one.
        func section(id: String) -> String? {
            guard let open = body.range(of: #"<section[^>]*id="\#(id)""#, options: .regularExpression),
                  let close = body[open.upperBound...].range(of: "</section>")
            else { return nil }
            return String(body[open.lowerBound..<close.upperBound])
        }

        /// The text of the element with this id (tags inside it removed), if the page has one.
        func text(id: String) -> String? {
            guard let open = body.range(of: #"id="\#(id)"[^>]*>"#, options: .regularExpression) else { return nil }
            let rest = body[open.upperBound...]
            let end = rest.range(of: "</")?.lowerBound ?? rest.endIndex
            return rest[..<end].replacingOccurrences(of: #"<[^>]+>"#, with: "", options: .regularExpression)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A logged-in operator's cookie and CSRF token.
    struct Session: Sendable {
        let cookie: String
        let csrf: String
    }

    func get(_ path: String, session: Session? = nil, replica: Int = 0) async throws -> Reply {
        let (url, headers) = (baseURL(replica) + path, Self.headers(session))
        return try await onOwnThread {
            let response = try HTTPClient().get(url: url, headers: headers)
            return Reply(status: response.status, headers: response.headers, body: String(decoding: response.body, as: UTF8.self))
        }
    }

    /// `forwardedFor`: the caller a proxy in front would name in X-Forwarded-For.
    func post(_ path: String, _ form: [String: String], session: Session? = nil, replica: Int = 0, forwardedFor: String? = nil) async throws -> Reply {
        try await post(path, fields: form.map { ($0.key, $0.value) }, session: session, replica: replica, forwardedFor: forwardedFor)
    }

    /// A form whose names may repeat (ticked checkboxes), in order.
    func post(
        _ path: String, fields form: [(String, String)], session: Session? = nil, replica: Int = 0, forwardedFor: String? = nil
    ) async throws -> Reply {
        var headers = Self.headers(session)
        if let forwardedFor { headers.append(name: "X-Forwarded-For", value: forwardedFor) }
        headers.append(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let body = form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        let (url, sent) = (baseURL(replica) + path, headers)
        return try await onOwnThread {
            let response = try HTTPClient().post(url: url, json: Array(body.utf8), headers: sent)
            return Reply(status: response.status, headers: response.headers, body: String(decoding: response.body, as: UTF8.self))
        }
    }

    /// Logs in through `replica` with `token` (ops-alice's by default) and reads the CSRF token off the overview.
    func logIn(replica: Int = 0, token: String? = nil) async throws -> Session {
        let login = try await post("/console/login", ["token": token ?? operatorToken], replica: replica)
        guard login.status == 303, let cookie = login.sessionCookie else { throw LoginFailed(status: login.status) }
        let overview = try await get("/console", session: Session(cookie: cookie, csrf: ""), replica: replica)
        guard let csrf = overview.csrf else { throw LoginFailed(status: overview.status) }
        return Session(cookie: cookie, csrf: csrf)
    }

    struct LoginFailed: Error { let status: Int }

    private static func headers(_ session: Session?) -> HTTPHeaders {
        session.map { ["Cookie": "rf_console=\($0.cookie)"] } ?? [:]
    }

    // MARK: The fleet behind it

    func status() async throws -> FleetStatus {
        let fleet = fleet
        return try await onOwnThread { try FleetStatus.read(settings: fleet) }
    }

    func onQueue<T: Sendable>(_ body: @escaping @Sendable (JobQueue) throws -> T) async throws -> T {
        let fleet = fleet
        return try await onOwnThread {
            try body(try JobQueue(
                connection: RedisConnection(fleet.redisConfiguration()), keys: QueueKeys(prefix: fleet.keyPrefix),
                consumer: JobQueue.consumerName(thread: 90)))
        }
    }

    func onGate<T: Sendable>(_ body: @escaping @Sendable (FleetGate) throws -> T) async throws -> T {
        let fleet = fleet
        return try await onOwnThread {
            try body(FleetGate(connection: try RedisConnection(fleet.redisConfiguration()), keys: try QueueKeys(prefix: fleet.keyPrefix),
                               limit: fleet.rateLimit))
        }
    }

    func onLedger<T: Sendable>(_ body: @escaping @Sendable (Ledger) throws -> T) async throws -> T {
        try await onOwnDatabase { try body(Ledger($0)) }
    }

    func onOwnDatabase<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let database = database
        return try await onOwnThread { try body(try database.connect()) }
    }

    /// Schedules every subscription (the queue fills; no worker runs), then buries one job, as a
    /// worker does with a receipt Apple rejects for good. Returns the dead letter's id and its subscription.
    func queueWithADeadLetter() async throws -> (letter: String, subscription: Int64) {
        let fleet = fleet
        _ = try await onOwnThread { try Scheduler(settings: fleet).run(Scheduler.Options(night: "console-test"), now: Date()) }
        return try await onQueue { queue in
            let reserved = try queue.reserve(count: 1, block: .milliseconds(100))[0]
            try queue.bury(reserved, failure: JobFailure(errorClass: "apple.21010", message: "the account was not found"))
            let letter = try queue.deadLetters()[0]
            return (letter.id, reserved.job.subscriptionID)
        }
    }

    /// A worker process, box-9-77-q1, silent for 40 s while it holds the job of `subscriptionID`: its
    /// heartbeat and its lease stamped on the driven clock the scripts read, set 40 s back, as one
    /// SIGSTOPped then would look.
    func aSilentWorker(holding subscriptionID: Int64) async throws {
        let fleet = fleet
        try await onOwnThread {
            let connection = try RedisConnection(fleet.redisConfiguration())
            let keys = try QueueKeys(prefix: fleet.keyPrefix)
            try connection.command("SET", keys.drivenClock, try connection.redisMicroseconds() - 40_000_000)
            let thread = try JobQueue(connection: connection, keys: keys, consumer: "box-9-77-q1-0", clock: .driven)
            try thread.enqueue(subscriptionIDs: [subscriptionID], run: "busy", reason: .manual)
            _ = try thread.reserve(count: 1, block: .zero)
            try thread.reportProcess(WorkerProcess(name: "box-9-77-q1", host: "box-9", pid: 77, threads: 2, startedAt: 0, jobsDone: 5))
        }
    }

    /// A real worker process (`receiptfleet worker`: one thread, a job at a time) stopped with SIGSTOP
    /// in the middle of the job of `subscriptionID`, while Apple takes its time: it holds the job, its
    /// heartbeat has ended and its lease runs down, as a frozen container's would. Call it before
    /// anything else is ready in the queue, which its thread would take first; the caller kills the
    /// process (`FleetProcess` does once it is dropped). Returns the process and its name in the fleet.
    func aStoppedWorker(holding subscriptionID: Int64) async throws -> (process: FleetProcess, name: String) {
        let store = simulator.store
        let before = store.statistics.requestsTotal
        // Far longer than it takes to see the call arrive and stop the worker in it.
        try store.setKnobs(FaultKnobs(latency: Latency(meanMs: 20_000)))
        let worker = try FleetProcess(["worker"], environment: fleet.processEnvironment.merging([
            Settings.sharedSecret.variable: fleet.sharedSecret?.value ?? "", Settings.concurrency.variable: "1",
            Settings.jobsPerBatch.variable: "1", Settings.visibilityTimeout.variable: "\(fleet.visibilityTimeout.components.seconds)",
            Settings.metricsAddress.variable: "off",
        ]) { $1 })
        _ = try await onQueue { try $0.enqueue(subscriptionID: subscriptionID, run: "stopped", reason: .notification) }
        let pid = Int(worker.pid)
        var name: String?
        try await eventually(within: .seconds(60), every: .milliseconds(50)) {
            guard store.statistics.requestsTotal > before else { return false }
            name = try await onQueue { queue in
                try queue.processes().first { $0.pid == pid && $0.inHand.map(\.job.subscriptionID) == [subscriptionID] }?.name
            }
            return name != nil
        }
        guard let name else {
            worker.send(SIGKILL)
            throw WorkerDidNotTakeTheJob(log: worker.log)
        }
        worker.send(SIGSTOP)
        try store.setKnobs(FaultKnobs())
        return (worker, name)
    }

    struct WorkerDidNotTakeTheJob: Error, CustomStringConvertible {
        let log: String
        var description: String { "the worker did not call Apple with the job within 60 s:\n\(log.suffix(2_000))" }
    }

    /// Puts `count` minute samples, one a minute up to now by Redis's clock, in place of the
    /// sampler's (whose first sample, of the empty fleet's counters, would sit among them and draw
    /// a rate from 0). `figures(minute)` is what a sample holds after its bucket: "READY RESERVED
    /// DELAYED DEAD GRANTED DONE RETRIED DIED|STATUS:COUNT,…". Returns Redis's now, in ms.
    func replaceMinuteSamples(_ count: Int, _ figures: @escaping @Sendable (Int) -> String) async throws -> Int64 {
        let fleet = fleet
        return try await onOwnThread {
            let redis = try RedisConnection(fleet.redisConfiguration())
            let key = "\(fleet.keyPrefix):console:minutes"
            try eventuallyOnThisThread(within: .seconds(10)) { try redis.command("ZCARD", key).int != 0 }
            try redis.command("DEL", key)
            let now = try redis.command("TIME").array!.first!.string.flatMap { Int64($0) }! * 1_000
            for minute in 0..<count {
                let at = now - Int64(count - minute) * 60_000
                try redis.command("ZADD", key, at, "\(at)|\(figures(minute))")
            }
            return now
        }
    }

    /// A subscription verified twice: a baseline a month and more ago, then now, with the events between.
    func subscriptionWithHistory() async throws -> SubscriptionRecord {
        let (fleet, simulator, original) = (fleet, simulator, firstOriginalTransactionID)
        let id = try await onLedger { try $0.subscriptions(originalTransactionID: original)[0].id }
        try await onOwnThread { _ = try ImmediateVerification.run(subscriptionID: id, settings: fleet, logger: Logger(label: "console-test")) }
        simulator.store.clock.set(nowMs: Int64(Date().timeIntervalSince1970 * 1000))
        try await onOwnThread { _ = try ImmediateVerification.run(subscriptionID: id, settings: fleet, logger: Logger(label: "console-test")) }
        return try await onLedger { try $0.subscription(id: id)! }
    }
}
