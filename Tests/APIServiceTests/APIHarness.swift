import AccessTokens
import APIService
import AppStore
import AppStoreSimulator
import Console
import Fleet
import FleetConfiguration
import Foundation
import HTTPClient
import JobQueue
import Lanes
import Ledger
import Logging
import MetricsTestKit
import PostgresClient
import RedisClient
import TestSupport

/// `receiptfleet serve` for one test: its own database and Redis prefix, the App Store simulator,
/// and the API server on a free loopback port, spoken to over real HTTP.
struct APIHarness: Sendable {
    let database: TestDatabase
    let simulator: LiveSimulator
    let fleet: FleetSettings
    let settings: APISettings
    let token: String
    let port: Int
    /// Every replica's port (`replicas` servers share the database and the Redis prefix); `port` is the first's.
    let ports: [Int]
    let metrics: TestMetrics
    let ca: TestCA

    static let sharedSecret = "test-shared-secret"
    static var nowMs: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The seed of the receipts `receipt(index:)` draws, which the simulator's Server API knows.
    static let seed: UInt64 = 7

    /// Runs `body` while a server configured by `configure` (and `configureFleet`) serves, or
    /// `replicas` of them; it logs into `log` when given; with `console`, `/console` is the ops
    /// console's. With `serverAPI`, the simulator serves
    /// the App Store Server API too and the fleet has its key; `serverAPIFleet` receipts send notifications.
    /// With `clock`, the servers read it (as a process reads the one its composition root gives it).
    static func with<T: Sendable>(
        configure: (inout APISettings) -> Void = { _ in }, configureFleet: (inout FleetSettings) -> Void = { _ in },
        replicas: Int = 1, log: CapturedLog? = nil, serverAPI: Bool = false, serverAPIFleet: Int = 0, console: ConsoleSettings? = nil,
        clock: (any FleetClock)? = nil, _ body: (APIHarness) async throws -> T
    ) async throws -> T {
        let ca = try TestCA()
        // Whole seconds, as the Server API's simulation draws the receipts' lifecycles.
        let startMs = nowMs / 1000 * 1000
        return try await TestDatabase.with { database in
            try await LiveSimulator.with(
                startMs: startMs,
                serverAPI: serverAPI ? SimulatedServerAPI.simulation(seed: seed, anchorMs: startMs, subscriptions: serverAPIFleet) : nil
            ) { simulator in
                _ = try await onOwnThread { try Migrator.migrate(try database.connect()) }
                var fleet = try FleetSettings.forTest(
                    redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("rfapi"))}",
                    endpoints: AppStoreEndpoints(production: simulator.productionURL, sandbox: simulator.sandboxURL),
                    sharedSecret: SharedSecret(sharedSecret), rateLimit: try RateLimit(perSecond: 1_000, burst: 100),
                    concurrency: 2, visibilityTimeout: .seconds(5))
                if serverAPI { fleet.serverAPI = try SimulatedServerAPI.settings(simulator) }
                // One app: the test CA's notifications name the first bundle id, the simulator's receipts the second.
                fleet.apps = .single(bundleIDs: ["com.example.app", Catalog.bundleIDs[0]])
                configureFleet(&fleet)
                let token = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
                var settings = try APISettings(.given([
                    Settings.address: "127.0.0.1:0", Settings.apiTokens: "tester:\(token)", Settings.maxBodyBytes: "\(64 * 1024)",
                    Settings.clientRateLimit: "1000", Settings.clientRateBurst: "1000", Settings.lanes: "2",
                ], command: .serve))
                settings.trustedRoots = [ca.root]
                configure(&settings)
                let metrics = TestMetrics()
                let logger = log.map { log in Logger(label: "api-test") { _ in log.handler } } ?? Logger(label: "api-test")
                var ports: [Int] = []
                var running: [RunningServices] = []
                defer { for services in running { services.cancel() } }
                for _ in 0..<replicas {
                    let (bound, listening) = AsyncStream.makeStream(of: Int.self)
                    let server = try APIServer(
                        settings: settings, fleet: fleet, console: console, logger: logger, metrics: metrics, clock: clock,
                        onListening: { listening.yield($0) })
                    running.append(RunningServices([server] + (server.consoleSampler.map { [$0] } ?? []), logger: logger))
                    guard let port = await bound.first(where: { _ in true }) else { throw ServerDidNotStart() }
                    ports.append(port)
                }
                return try await body(APIHarness(
                    database: database, simulator: simulator, fleet: fleet, settings: settings, token: token, port: ports[0],
                    ports: ports, metrics: metrics, ca: ca))
            }
        }
    }

    struct ServerDidNotStart: Error {}

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The same deployment, spoken to through replica `index`.
    func replica(_ index: Int) -> APIHarness {
        APIHarness(
            database: database, simulator: simulator, fleet: fleet, settings: settings, token: token, port: ports[index],
            ports: ports, metrics: metrics, ca: ca)
    }

    /// An answer: status, headers and the body as JSON.
    struct Reply: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: [UInt8]

        /// The body as a JSON object; empty if it is not one.
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:] }
        var code: String? { json["code"] as? String }
    }

    /// The API's token, none, another bearer token, or a console session's cookie (`name=value`).
    enum Auth: Sendable { case token, none, bearer(String), cookie(String) }

    func post(_ path: String, _ object: [String: Any], auth: Auth = .token) async throws -> Reply {
        try await post(path, bytes: Array(try JSONSerialization.data(withJSONObject: object)), auth: auth)
    }

    func post(_ path: String, bytes: [UInt8], auth: Auth = .token, contentType: String? = nil) async throws -> Reply {
        var fields = headers(auth)
        if let contentType { fields.append(name: "Content-Type", value: contentType) }
        let (url, headers) = (baseURL + path, fields)
        return try await onOwnThread {
            let response = try HTTPClient().post(url: url, json: bytes, headers: headers)
            return Reply(status: response.status, headers: response.headers, body: response.body)
        }
    }

    /// `forwardedFor`: an `X-Forwarded-For` header, as a proxy in front of `serve` would add;
    /// `forwarded`: a `Forwarded` header, as a client (or a proxy of RFC 7239) would write it.
    func get(_ path: String, auth: Auth = .token, forwardedFor: String? = nil, forwarded: String? = nil) async throws -> Reply {
        let url = baseURL + path
        var fields = headers(auth).fields
        if let forwardedFor { fields.append(.init(name: "X-Forwarded-For", value: forwardedFor)) }
        if let forwarded { fields.append(.init(name: "Forwarded", value: forwarded)) }
        let headers = HTTPHeaders(fields)
        return try await onOwnThread {
            let response = try HTTPClient().get(url: url, headers: headers)
            return Reply(status: response.status, headers: response.headers, body: response.body)
        }
    }

    func put(_ path: String, bytes: [UInt8] = Array("{}".utf8), auth: Auth = .token) async throws -> Reply {
        let (url, headers) = (baseURL + path, headers(auth))
        return try await onOwnThread {
            let response = try HTTPClient().put(url: url, json: bytes, headers: headers)
            return Reply(status: response.status, headers: response.headers, body: response.body)
        }
    }

    func delete(_ path: String, auth: Auth = .token) async throws -> Reply {
        let (url, headers) = (baseURL + path, headers(auth))
        return try await onOwnThread {
            let response = try HTTPClient().delete(url: url, headers: headers)
            return Reply(status: response.status, headers: response.headers, body: response.body)
        }
    }

    private func headers(_ auth: Auth) -> HTTPHeaders {
        switch auth {
        case .token: ["Authorization": "Bearer \(token)"]
        case .bearer(let value): ["Authorization": "Bearer \(value)"]
        case .none: [:]
        case .cookie(let cookie): ["Cookie": cookie]
        }
    }

    /// A simulated receipt: index 0 of a fleet is a monthly subscription that renews for ever.
    func receipt(index: Int = 0, seed: UInt64 = seed, app: Int = 0) -> SimulatedReceipt {
        SimulatedReceipt.fleet(count: index + 1, seed: seed, anchorMs: simulator.store.clock.nowMs, app: app)[index]
    }

    /// The length of a Redis stream of this deployment, e.g. `keys.readyHigh`.
    func streamLength(_ key: @escaping @Sendable (QueueKeys) -> String) async throws -> Int {
        let (url, prefix) = (fleet.redisURL, fleet.keyPrefix)
        return try await onOwnThread {
            let connection = try RedisConnection(RedisConfiguration(url: url))
            return Int(try connection.command("XLEN", key(try QueueKeys(prefix: prefix))).int ?? -1)
        }
    }

    /// The jobs of this deployment's queue, by where they are.
    func jobs() async throws -> JobCounts {
        let (url, prefix) = (fleet.redisURL, fleet.keyPrefix)
        return try await onOwnThread {
            let connection = try RedisConnection(RedisConfiguration(url: url))
            return try JobQueue(connection: connection, keys: try QueueKeys(prefix: prefix), consumer: "api-test").stats().jobs
        }
    }

    /// Halts the fleet, as an operator's `receiptfleet pause` does.
    func haltFleet() async throws {
        try await gate { try $0.halt(reason: "halted by the test") }
    }

    /// Resumes a halted fleet, as an operator's `receiptfleet resume` does.
    func resumeFleet() async throws {
        try await gate { try $0.resume() }
    }

    private func gate(_ body: @escaping @Sendable (FleetGate) throws -> Void) async throws {
        let fleet = fleet
        try await onOwnThread {
            let connection = try RedisConnection(RedisConfiguration(url: fleet.redisURL))
            try body(FleetGate(connection: connection, keys: try QueueKeys(prefix: fleet.keyPrefix), limit: fleet.rateLimit))
        }
    }

    /// Runs one statement on the test database.
    func execute(_ sql: String) async throws {
        let database = database
        try await onOwnThread { try database.connect().execute(sql) }
    }

    /// One number from the test database, e.g. `SELECT count(*) AS n FROM events`.
    func count(_ sql: String) async throws -> Int {
        let database = database
        return try await onOwnThread { Int(try database.connect().query(sql)[0]["n"].int64() ?? -1) }
    }

    /// The rows of one query on the test database, each made into a `T`.
    func rows<T: Sendable>(_ sql: String, _ row: @escaping @Sendable (PostgresRow) throws -> T) async throws -> [T] {
        let database = database
        return try await onOwnThread { try database.connect().query(sql).map(row) }
    }

    /// A counter's total, 0 if it was never incremented.
    func counter(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        (try? metrics.expectCounter(label, dimensions).totalValue) ?? 0
    }
}
