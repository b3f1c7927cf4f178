import AppStoreSimulator
import Foundation
import JobQueue
import Ledger
import PostgresClient
import RedisClient

/// What a demo night is checked against: the simulator's ground truth and the queue's books.
struct DemoCheck: Encodable {
    /// Jobs the night's scheduler run enqueued.
    var enqueued = 0
    /// Of which settled for good: verified, or found unverifiable (a permanent failure).
    var done = 0
    /// Of which dead letters, and of those, how many were not receipts Apple refuses for good.
    var dead = 0
    var deadForGoodInput = 0
    /// Of the dead, those Apple's garbage explains: jobs that drew garbage on every attempt while
    /// the demo's garbage spell lasted (error class "http.…"); an operator replays them.
    var deadFromGarbage = 0
    /// Jobs neither done nor dead once the queue ran empty.
    var lost: Int { max(0, enqueued - done - dead) }
    /// Events that repeat another event of the same subscription with the same type and payload.
    var duplicatedEvents = 0
    /// Events the `{rf}:events` stream holds under two ids or more (same subscription or purchase,
    /// type and payload): what a consumer de-duplicating by id would take twice.
    var streamDuplicates = 0
    /// Stream entries whose event id an earlier entry had (published again after a restore, say):
    /// consumers de-duplicate them by id.
    var republished = 0
    /// Subscriptions whose stored status differs from the simulator's truth at their last verification.
    var mismatches = 0
    var mismatchExamples: [String] = []
    /// Events the simulator's truth holds that the fleet did not announce, and announced beyond it.
    var missingEvents = 0
    var extraEvents = 0
    var eventExamples: [String] = []

    var passed: Bool {
        lost == 0 && duplicatedEvents == 0 && streamDuplicates == 0 && mismatches == 0 && deadForGoodInput == 0 && missingEvents == 0 && extraEvents == 0
    }

    /// Checks night `runID` (all its passes) against the simulated `fleet`: the books of the queue,
    /// the events, and every verified subscription's state.
    static func run(
        _ runID: String, enqueued: Int, fleet: [SimulatedSubscription], postgres: PostgresConnection,
        queue: JobQueue, stream: (redis: RedisConnection, key: String), garbageSpell: Bool = false
    ) throws -> DemoCheck {
        var check = DemoCheck(enqueued: enqueued)
        check.done = Int(try postgres.query("""
            SELECT count(DISTINCT subscription_id) AS n FROM verifications
            WHERE (run_id = $1 OR starts_with(run_id, $1 || '/')) AND outcome IN ('verified', 'permanent_failure')
            """, [.text(runID)])[0]["n"].int64() ?? 0)
        let byID = try Dictionary(postgres.query("SELECT id, original_transaction_id FROM subscriptions").map {
            (try $0["id"].int64() ?? 0, try $0["original_transaction_id"].text() ?? "")
        }, uniquingKeysWith: { first, _ in first })
        let bySubscription = Dictionary(fleet.map { ($0.originalTransactionID, $0) }, uniquingKeysWith: { first, _ in first })
        let dead = try queue.deadLetters(matching: DeadLetterFilter(runID: runID), limit: 1_000_000)
        check.dead = dead.count
        let fromGarbage = { (letter: DeadLetter) in garbageSpell && letter.failure.errorClass.hasPrefix("http.") }
        check.deadFromGarbage = dead.filter(fromGarbage).count
        check.deadForGoodInput = dead.filter { !fromGarbage($0) }.filter { letter in
            guard let id = letter.job?.subscriptionID, let subscription = byID[id].flatMap({ bySubscription[$0] }) else { return true }
            return ![.malformed, .deletedAccount].contains(subscription.receipt.kind)
        }.count
        check.duplicatedEvents = Int(try postgres.query("""
            SELECT coalesce(sum(n - 1), 0)::bigint AS n FROM (
                SELECT count(*) AS n FROM events GROUP BY subscription_id, type, payload HAVING count(*) > 1) AS repeated
            """)[0]["n"].int64() ?? 0)
        try check.countStreamDuplicates(stream.redis, key: stream.key)
        try check.compareEvents(fleet: bySubscription, postgres: postgres)
        try check.comparePurchases(fleet: fleet, postgres: postgres)
        for row in try postgres.query("SELECT original_transaction_id, status, last_verified_at FROM subscriptions WHERE last_verified_at IS NOT NULL") {
            guard let id = try row["original_transaction_id"].text(), let subscription = bySubscription[id],
                  let verifiedAt = try row["last_verified_at"].timestamptz() else { continue }
            // A verification is stamped with the moment Apple judged (its request_date), so the
            // truth of that very millisecond is the one to match.
            let verifiedMs = milliseconds(verifiedAt)
            let truth = subscription.groundTruth(at: verifiedMs).status.rawValue
            let stored = try row["status"].text() ?? "-"
            if stored != truth {
                check.mismatches += 1
                if check.mismatchExamples.count < 5 { check.mismatchExamples.append("\(subscription.receipt.kind) \(id): \(stored) ≠ \(truth)") }
            }
        }
        return check
    }

    /// Every subscription's announced events against the truth of the looks the fleet took at it:
    /// the verifications that wrote its state, at the moments Apple judged.
    private mutating func compareEvents(fleet: [String: SimulatedSubscription], postgres: PostgresConnection) throws {
        var looks: [String: [Look]] = [:]
        for row in try postgres.query("""
            SELECT s.original_transaction_id, v.judged_at, v.backend FROM verifications v
            JOIN subscriptions s ON s.id = v.subscription_id WHERE v.judged_at IS NOT NULL ORDER BY v.id
            """) {
            guard let id = try row["original_transaction_id"].text(), let judged = try row["judged_at"].timestamptz() else { continue }
            looks[id, default: []].append(Look(at: milliseconds(judged), seesWholeHistory: try row["backend"].text() == "server_api"))
        }
        var announced: [String: [ExpectedEvent]] = [:]
        for row in try postgres.query("SELECT original_transaction_id, type, occurred_at FROM events") {
            guard let id = try row["original_transaction_id"].text(), let type = try row["type"].text(),
                  let at = try row["occurred_at"].timestamptz() else { continue }
            announced[id, default: []].append(ExpectedEvent(type, at: milliseconds(at)))
        }
        for (id, subscription) in fleet.sorted(by: { $0.key < $1.key }) {
            let result = EventCheck(subscription, looks: looks[id] ?? [], announced: announced[id] ?? [])
            missingEvents += result.missing.count
            extraEvents += result.extra.count
            if !result.passed, eventExamples.count < 5 {
                eventExamples.append("\(subscription.receipt.kind) \(id): missing \(result.missing), extra \(result.extra)")
            }
        }
    }

    /// Reads the whole stream: entries are (id, [field, value, …]).
    private mutating func countStreamDuplicates(_ redis: RedisConnection, key: String) throws {
        var ids: Set<String> = []
        var idsByContent: [[String]: Set<String>] = [:]
        for entry in try redis.command("XRANGE", key, "-", "+").array ?? [] {
            let flat = entry.array?.last?.array?.map { $0.string ?? "" } ?? []
            let fields = Dictionary(stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0], flat[$0 + 1]) }) { first, _ in first }
            let id = fields["id"] ?? ""
            if !ids.insert(id).inserted { republished += 1 }
            let content = ["subscription_id", "purchase_id", "type", "payload"].map { fields[$0] ?? "" }
            idsByContent[content, default: []].insert(id)
        }
        streamDuplicates = idsByContent.values.reduce(0) { $0 + $1.count - 1 }
    }

    /// Every one-time purchase the ledger holds against the truth at its last look (the night's
    /// clock, which the simulator shares tonight: its refunds fall days apart, not seconds).
    private mutating func comparePurchases(fleet: [SimulatedSubscription], postgres: PostgresConnection) throws {
        let lifetime = Dictionary(fleet.compactMap { $0.receipt.lifetimePurchase.map { ($0.transactionID, $0) } },
                                  uniquingKeysWith: { first, _ in first })
        for row in try postgres.query("SELECT transaction_id, status, last_verified_at FROM purchases") {
            guard let id = try row["transaction_id"].text(), let purchase = lifetime[id],
                  let looked = try row["last_verified_at"].timestamptz() else { continue }
            let stored = try row["status"].text() ?? "-"
            let truth = purchase.status(at: milliseconds(looked)) ?? "not bought"
            if stored != truth {
                mismatches += 1
                if mismatchExamples.count < 5 { mismatchExamples.append("lifetime purchase \(id): \(stored) ≠ \(truth)") }
            }
        }
    }

    var text: String {
        var lines = [
            "-- checked against the simulator's ground truth",
            "  jobs enqueued \(enqueued): done \(done), dead \(dead) (\(deadForGoodInput) for good input"
                + (deadFromGarbage > 0 ? ", \(deadFromGarbage) from Apple's garbage: replay them" : "") + "), lost \(lost)",
            "  subscriptions whose state differs from the truth: \(mismatches)",
            "  duplicated events: \(duplicatedEvents); in the stream under another id: \(streamDuplicates) "
                + "(published again under the same id: \(republished))",
            "  events missing against the truth: \(missingEvents), beyond it: \(extraEvents)",
        ]
        lines += (mismatchExamples + eventExamples).map { "    \($0)" }
        lines.append(passed ? "  PASSED" : "  FAILED")
        return lines.joined(separator: "\n")
    }

    enum CodingKeys: String, CodingKey {
        case enqueued, done, dead, deadForGoodInput = "dead_for_good_input", deadFromGarbage = "dead_from_garbage", lost
        case duplicatedEvents = "duplicated_events"
        case streamDuplicates = "stream_duplicates", republished
        case mismatches, mismatchExamples = "mismatch_examples", passed
        case missingEvents = "missing_events", extraEvents = "extra_events", eventExamples = "event_examples"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(enqueued, forKey: .enqueued)
        try container.encode(done, forKey: .done)
        try container.encode(dead, forKey: .dead)
        try container.encode(deadForGoodInput, forKey: .deadForGoodInput)
        try container.encode(deadFromGarbage, forKey: .deadFromGarbage)
        try container.encode(lost, forKey: .lost)
        try container.encode(duplicatedEvents, forKey: .duplicatedEvents)
        try container.encode(streamDuplicates, forKey: .streamDuplicates)
        try container.encode(republished, forKey: .republished)
        try container.encode(mismatches, forKey: .mismatches)
        try container.encode(mismatchExamples, forKey: .mismatchExamples)
        try container.encode(missingEvents, forKey: .missingEvents)
        try container.encode(extraEvents, forKey: .extraEvents)
        try container.encode(eventExamples, forKey: .eventExamples)
        try container.encode(passed, forKey: .passed)
    }
}

/// A stored time in Apple's unit, milliseconds since 1970.
private func milliseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1000).rounded())
}
