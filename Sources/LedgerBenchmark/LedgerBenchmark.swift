import AppStore
import Foundation
import Lanes
import EventRelay
import Ledger
import PostgresClient
import RedisClient
import Synchronization

/// Measures the ledger against a PostgreSQL server, in a database of its own that it drops at the end:
///   seeding          addSubscriptions, 1,000 a statement
///   first / renewal  batched persistence, 50 results a batch, from several threads: first
///                    verifications (a baseline, no events) and renewals (a transaction and an event each)
///   due pages        the scheduler's keyset pages of 1,000 ids
/// Prints one `name value` line per figure (benchmarks/ledger reads them).
///
///     ledger-benchmark URL [subscriptions (100000)] [writes (20000)] [threads (2)] [receipt bytes (2048)]
@main struct LedgerBenchmark {
    let subscriptions: Int
    let writes: Int
    let threads: Int
    let receiptBytes: Int
    let batchSize = 50

    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst().map { $0 }
        guard let url = arguments.first else {
            print("usage: ledger-benchmark URL [subscriptions] [writes] [threads] [receipt bytes]")
            exit(2)
        }
        func number(_ index: Int, _ fallback: Int) -> Int { arguments.count > index ? Int(arguments[index]) ?? fallback : fallback }
        let subscriptions = number(1, 100_000)
        let benchmark = LedgerBenchmark(
            subscriptions: subscriptions, writes: min(number(2, 20_000), subscriptions), threads: number(3, 2),
            receiptBytes: number(4, 2048))
        let admin = try PostgresConnection(configuration: PostgresConfiguration(url))
        let name = "rf_bench_ledger_\(getpid())"
        try admin.execute("CREATE DATABASE \(name)")  // a generated identifier, never input
        defer {
            // Without FORCE: after bulk writes an autovacuum worker is often in the database, and
            // FORCE refuses to end it for a role that is not a superuser; a plain DROP stops it itself.
            do { try admin.execute("DROP DATABASE IF EXISTS \(name)") } catch {
                FileHandle.standardError.write(Data("could not drop database \(name): \(error)\n".utf8))
            }
        }
        // The server URL with its database name replaced.
        let slash = url.range(of: "/", options: .backwards)!.upperBound
        let query = url[slash...].firstIndex(of: "?").map { String(url[$0...]) } ?? ""
        try benchmark.run(database: String(url[..<slash]) + name + query)
    }

    func run(database: String) throws {
        let ledger = Ledger(try PostgresConnection(configuration: PostgresConfiguration(database)))
        try Migrator.migrate(ledger.connection)
        let blob = Data((0..<receiptBytes * 3 / 4).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let seeding = try measure {
            for start in stride(from: 0, to: subscriptions, by: 10_000) {
                try ledger.addSubscriptions((start..<min(start + 10_000, subscriptions)).map { index in
                    NewSubscription(
                        originalTransactionID: String(1_000_000_000 + index), receipt: ReceiptData(base64: "\(index)" + blob))
                })
            }
        }
        print("seed_rows_per_second \(Int(Double(subscriptions) / seeding)) (receipts of \(receiptBytes) bytes)")

        let ids = try ledger.connection.query("SELECT id FROM subscriptions ORDER BY id LIMIT $1", [.int64(Int64(writes))])
            .map { try $0["id"].int64() ?? 0 }
        let now = Date()
        let tonight = now + 86_400
        var batches: [[VerificationWrite]] = []
        let loading = try measure { batches = try prepare(ledger, ids: ids, months: 1, now: now) }
        print("load_and_analyse_per_second \(Int(Double(ids.count) / loading)) (one thread)")
        print("first_verifications_per_second \(Int(try persist(batches, database: database, nextNightlyRun: tonight)))")
        batches = try prepare(ledger, ids: ids, months: 2, now: now + 60)
        let events = batches.joined().map { $0.change?.analysis.events.count ?? 0 }.reduce(0, +)
        guard events == ids.count else { throw BenchmarkError("expected one renewal event per write, got \(events)") }
        let renewals = try persist(batches, database: database, nextNightlyRun: tonight)
        print("renewals_per_second \(Int(renewals)) (a new transaction and an event each)")
        try relay(database: database, events: events)

        var pages = 0, due = 0
        let paging = try measure {
            for _ in 0..<3 {
                var cursor: DueCursor? = nil
                repeat {
                    let page = try ledger.dueSubscriptions(now: now + 3600, after: cursor, limit: 1000)
                    (pages, due, cursor) = (pages + 1, due + page.subscriptions.count, page.next)
                } while cursor != nil
            }
        }
        print("due_pages_per_second \(Int(Double(pages) / paging)) (\(due / 3) due ids, 1000 a page)")
    }

    /// Publishes the renewals' events to a Redis stream of its own (RECEIPTFLEET_REDIS_URL) with
    /// one relay, and prints events/s. Skipped when no Redis URL is set.
    func relay(database: String, events: Int) throws {
        guard let redisURL = ProcessInfo.processInfo.environment["RECEIPTFLEET_REDIS_URL"] else {
            print("relay_events_per_second skipped (set RECEIPTFLEET_REDIS_URL)")
            return
        }
        let redis = try RedisConnection(RedisConfiguration(url: redisURL))
        let configuration = try RelayConfiguration(keyPrefix: "{rfbench\(getpid())}")
        defer { _ = try? redis.command("DEL", configuration.streamKey) }
        let relay = try OutboxRelay(
            database: PostgresConnection(configuration: PostgresConfiguration(database)), redis: redis,
            configuration: configuration)
        var published = 0
        let seconds = try measure {
            while true {
                let count = try relay.runOnce()
                if count == 0 { break }
                published += count
            }
        }
        guard published == events else { throw BenchmarkError("the relay published \(published) of \(events) events") }
        print("relay_events_per_second \(Int(Double(published) / seconds)) (one relay, batches of 500)")
    }

    /// Loads the subscriptions and analyses an answer for each, in batches.
    func prepare(_ ledger: Ledger, ids: [Int64], months: Int, now: Date) throws -> [[VerificationWrite]] {
        try stride(from: 0, to: ids.count, by: batchSize).map { start in
            try ledger.loadForVerification(ids: Array(ids[start..<min(start + batchSize, ids.count)])).map { loaded in
                let analysis = try SubscriptionAnalyzer.analyze(
                    stored: loaded.state, response: Self.response(for: loaded.originalTransactionID, months: months, now: now),
                    originalTransactionID: loaded.originalTransactionID, now: now)
                let attempt = VerificationAttempt(
                    attemptedAt: now, outcome: .verified, environment: .production, appleStatus: 0, httpStatus: 200,
                    latencyMilliseconds: 150, runID: "benchmark")
                return .analysed(analysis, of: loaded, attempt: attempt)
            }
        }
    }

    /// Writes the batches from all threads (thread t takes batches t, t + threads, …); returns writes/s.
    func persist(_ batches: [[VerificationWrite]], database: String, nextNightlyRun: Date) throws -> Double {
        let written = Tally()
        let threads = threads
        let seconds = try measure {
            try onThreads(threads) { thread in
                let ledger = Ledger(try PostgresConnection(configuration: PostgresConfiguration(database)))
                for index in stride(from: thread, to: batches.count, by: threads) {
                    let outcomes = try ledger.persist(batches[index], nextNightlyRun: nextNightlyRun)
                    written.add(outcomes.filter { if case .written = $0 { true } else { false } }.count)
                }
            }
        }
        let total = written.total
        guard total == batches.joined().count else { throw BenchmarkError("only \(total) writes succeeded") }
        return Double(total) / seconds
    }

    /// A verifyReceipt answer for one subscription: `months` monthly periods, the last one current.
    static func response(for id: String, months: Int, now: Date) throws -> VerifyReceiptResponse {
        let entries = (0..<months).map { month -> [String: Any] in
            let start = now.timeIntervalSince1970 + Double(month - months + 1) * 30 * 86_400 - 86_400
            return [
                "transaction_id": "\(id)-\(month)", "original_transaction_id": id, "product_id": "com.example.pro",
                "purchase_date_ms": String(Int64(start * 1000)), "expires_date_ms": String(Int64((start + 30 * 86_400) * 1000)),
                "is_trial_period": "false", "in_app_ownership_type": "PURCHASED",
            ]
        }
        let renewal = [
            "original_transaction_id": id, "auto_renew_status": "1", "auto_renew_product_id": "com.example.pro",
            "product_id": "com.example.pro",
        ]
        let body: [String: Any] = [
            "status": 0, "environment": "Production", "latest_receipt_info": entries, "pending_renewal_info": [renewal],
        ]
        return try VerifyReceiptResponse(body: JSONSerialization.data(withJSONObject: body), httpStatus: 200)
    }
}

func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = (ContinuousClock.now - start).components
    return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
}

/// Runs `body(thread)` on `count` threads of their own and waits for all of them; throws the first failure.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let failures = Failures()
    Lanes.onThreads(count, named: "rf-bench") { thread in
        do { try body(thread) } catch { failures.record("\(error)") }
    }
    if let first = failures.first { throw BenchmarkError(first) }
}

final class Tally: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ amount: Int) { count.add(amount, ordering: .relaxed) }
    var total: Int { count.load(ordering: .relaxed) }
}

final class Failures: Sendable {
    private let messages = Mutex<[String]>([])
    func record(_ message: String) { messages.withLock { $0.append(message) } }
    var first: String? { messages.withLock { $0.first } }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
