import AppStore
import AppStoreSimulator
import Fleet
import FleetConfiguration
import Foundation
import HTTPClient
import JobQueue
import Ledger
import Logging
import Observability
import PostgresClient
import RedisClient
import TestSupport

/// A fleet deployment of its own for one test: a database, a Redis prefix, the simulator over
/// HTTP, and a metrics address on a free port.
struct Deployment: Sendable {
    let database: TestDatabase
    let simulator: LiveSimulator
    let settings: FleetSettings
    let receipts: [SimulatedReceipt]

    /// Runs `body` with a migrated database holding the subscriptions of `receipts` simulated
    /// receipts, and a simulator that requires `sharedSecret` when one is given.
    static func with<T: Sendable>(
        receipts count: Int = 0, sharedSecret: String? = nil, _ body: (Deployment) async throws -> T
    ) async throws -> T {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        return try await TestDatabase.with { database in
            try await LiveSimulator.with(knobs: FaultKnobs(sharedSecret: sharedSecret), startMs: nowMs) { simulator in
                let deployment = Deployment(
                    database: database, simulator: simulator,
                    settings: try FleetSettings.forTest(
                        redisURL: TestServers.redisURL, postgresURL: database.url, keyPrefix: "{\(uniqueName("rfm"))}",
                        endpoints: AppStoreEndpoints(production: simulator.productionURL, sandbox: simulator.sandboxURL),
                        sharedSecret: sharedSecret.map(SharedSecret.init), rateLimit: try RateLimit(perSecond: 5_000, burst: 100),
                        retryPolicy: try RetryPolicy(base: .milliseconds(50), cap: .milliseconds(200), maxAttempts: 5),
                        concurrency: 3, visibilityTimeout: .seconds(5),
                        metricsAddress: MetricsAddress(host: "127.0.0.1", port: 0)).forLocalWebhooks,
                    receipts: SimulatedReceipt.fleet(count: count, seed: 11, anchorMs: nowMs))
                try await deployment.load()
                return try await body(deployment)
            }
        }
    }

    private func load() async throws {
        let receipts = receipts
        try await onOwnThread {
            let connection = try database.connect()
            try Migrator.migrate(connection)
            try Ledger(connection).addSubscriptions(receipts.flatMap(\.subscriptions).map(\.newSubscription))
        }
    }

    /// The queue's state as Redis tells it.
    func queueStats() async throws -> QueueStats {
        let settings = settings
        return try await onOwnThread {
            try JobQueue(
                connection: RedisConnection(RedisConfiguration(url: settings.redisURL)),
                keys: QueueKeys(prefix: settings.keyPrefix), consumer: "metrics-test"
            ).stats()
        }
    }

    /// Waits (up to 60 s) until no job is ready, reserved or delayed.
    func waitUntilTheQueueIsEmpty() async throws {
        guard try await eventually(within: .seconds(60), every: .milliseconds(200), { try await queueStats().jobs.outstanding == 0 }) else {
            throw Timeout(what: "the queue to empty: \(try await queueStats())")
        }
    }

    /// The number of rows `sql` counts (one `count(*)` column named n).
    func count(_ sql: String) async throws -> Int {
        try await onOwnThread { Int(try database.connect().query(sql)[0]["n"].int64() ?? -1) }
    }
}

struct Timeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A logger that drops everything: the tests read the metrics, not the logs.
let quietLogger = Logger(label: "metrics-test") { _ in SwiftLogNoOpLogHandler() }

/// A GET over real HTTP (the project's own client, on a thread of its own).
func fetch(_ url: String) async throws -> (status: Int, body: String) {
    try await onOwnThread {
        let response = try HTTPClient().get(url: url)
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }
}

/// A metrics server a test runs, where it listens.
struct ServedMetrics {
    let address: MetricsAddress

    func fetch(_ path: String) async throws -> (status: Int, body: String) {
        try await ObservabilityTests.fetch("http://\(address)\(path)")
    }

    /// GET /metrics, parsed.
    func scrape() async throws -> Scrape {
        let (status, body) = try await fetch("/metrics")
        guard status == 200 else { throw ScrapeFailed(status: status, body: body) }
        return Scrape(body)
    }
}

struct ScrapeFailed: Error {
    let status: Int
    let body: String
}

/// A scrape in the Prometheus text format: the metric families and their samples.
struct Scrape {
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    let text: String
    /// Family name → type (counter, gauge, histogram), from the `# TYPE` lines.
    let families: [String: String]
    let samples: [Sample]

    init(_ text: String) {
        self.text = text
        var families: [String: String] = [:]
        var samples: [Sample] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { families[String(parts[2])] = String(parts[3]) }
            } else if !line.hasPrefix("#"), let sample = Self.sample(line) {
                samples.append(sample)
            }
        }
        self.families = families
        self.samples = samples
    }

    /// The sum of the samples of `name` whose labels include `labels`; nil when there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }
        return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
    }

    /// `name{a="1",b="2"} 3.5` or `name 3.5`. Label values here hold no quotes or commas.
    private static func sample(_ line: Substring) -> Sample? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
        var labels: [String: String] = [:]
        for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { labels[String(parts[0])] = String(parts[1].dropFirst().dropLast()) }
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }
}

/// Runs `body` with a metrics server for `settings` (which must not be off), stopped afterwards.
func withMetricsServer<T: Sendable>(
    _ settings: FleetSettings, metrics: ProcessMetrics = ProcessMetrics(), _ body: (ServedMetrics) async throws -> T
) async throws -> T {
    let (bound, listening) = AsyncStream.makeStream(of: MetricsAddress.self)
    guard let server = MetricsServer(
        settings: settings, metrics: metrics, clock: settings.processClock(), logger: quietLogger, onListening: { listening.yield($0) })
    else { throw MetricsAreOff() }
    let running = RunningServices([server], logger: quietLogger)
    Task { _ = try? await running.stopped(); listening.finish() }  // a server that cannot listen ends the wait
    guard let address = await bound.first(where: { _ in true }) else {
        try await running.stopped()
        throw MetricsAreOff()
    }
    return try await running.whileRunning { try await body(ServedMetrics(address: address)) }
}

struct MetricsAreOff: Error {}

/// Runs a worker process's services recording into `metrics` until every job has left the queue, then stops them.
func work(_ deployment: Deployment, metrics: ProcessMetrics) async throws {
    try await RunningServices.worker(settings: deployment.settings, metrics: metrics, logger: quietLogger).whileRunning {
        try await deployment.waitUntilTheQueueIsEmpty()
    }
}

/// Enqueues every subscription of the deployment, as the nightly scheduler does.
func schedule(_ deployment: Deployment, metrics: ProcessMetrics) async throws -> ScheduleSummary {
    let settings = deployment.settings
    return try await onOwnThread {
        try Scheduler(settings: settings, metrics: metrics.fleet).run(Scheduler.Options(night: "metrics"), now: Date())
    }
}
