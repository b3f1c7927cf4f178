import AppStore
import Foundation
import PostgresClient

/// How long the ledger keeps what only history needs; nil keeps it for ever. Subscriptions,
/// purchases, transactions, unpublished events and the audit trail are never pruned.
public struct RetentionPolicy: Sendable, Equatable {
    /// Verification attempts (`verifications`), and the scheduler's nights (`scheduler_nights`, with
    /// their passes) that summarise them.
    public var verifications: Duration?
    /// Published events none of whose webhook deliveries is still pending; `webhooks replay`
    /// reaches back this far.
    public var events: Duration?
    /// Webhook deliveries that ended (delivered or failed) and webhook attempts.
    public var webhookLogs: Duration?
    /// The receipts of subscriptions expired or refunded for longer than this. verifyReceipt cannot
    /// check such a subscription any more, so it is checked again only when its app registers a
    /// receipt for it (a returning customer); the Server API needs no receipt.
    public var expiredReceipts: Duration?

    public init(verifications: Duration? = .days(90), events: Duration? = .days(400), webhookLogs: Duration? = .days(30),
                expiredReceipts: Duration? = .days(400)) {
        (self.verifications, self.events, self.webhookLogs, self.expiredReceipts) = (verifications, events, webhookLogs, expiredReceipts)
    }
}

extension Duration {
    public static func days(_ days: Double) -> Duration { .seconds(days * 86_400) }
}

/// What `Ledger.prune` deleted, so far.
public struct Pruned: Sendable, Equatable {
    public var verifications = 0
    public var events = 0
    public var webhookDeliveries = 0
    public var webhookAttempts = 0
    public var receipts = 0
    /// Scheduler nights (their passes with them), pruned with the verifications they summarise.
    public var nights = 0
    /// Transactions run, and the longest of them: how long a batch held its rows.
    public var batches = 0
    public var longestBatch: Duration = .zero

    public init() {}

    public var total: Int { verifications + events + webhookDeliveries + webhookAttempts + receipts + nights }

    /// What was deleted, as `receiptfleet prune` says it.
    public var summary: String {
        """
        Deleted \(verifications) verification attempt(s), \(nights) scheduler night(s) with their passes, \(events) event(s), \
        \(webhookDeliveries) webhook delivery(ies), \(webhookAttempts) webhook attempt(s) and \(receipts) receipt(s), \
        in \(batches) batch(es); the longest took \(longestBatch.formatted(.units(allowed: [.seconds, .milliseconds], width: .abbreviated))).
        """
    }
}

extension Ledger {
    /// Deletes what `policy` no longer keeps, as of `now`, in batches of at most `batchSize` rows,
    /// each its own short transaction, so that workers writing meanwhile wait for a batch at most.
    /// Each history table is walked once in key order (which follows time) from its oldest row, up
    /// to the first page wholly past the cutoff: one pass over the old rows, however large the
    /// table (receipts, which have no time of their own, are walked whole). Rows that are still
    /// needed are skipped (an event not yet published, or with a delivery pending); safe to stop at
    /// any point and to run again. `progress` hears the running totals after each batch.
    ///
    /// Deleted rows leave space PostgreSQL's autovacuum makes reusable: tables stop growing rather
    /// than shrink (docs/performance.md).
    /// - Parameter defaultBackend: the deployment's `backend`, which subscriptions that name none follow.
    @discardableResult
    public func prune(
        _ policy: RetentionPolicy, defaultBackend: VerificationBackend, now: Date = Date(), batchSize: Int = 5_000,
        progress: (Pruned) -> Void = { _ in }
    ) throws -> Pruned {
        var pruned = Pruned()
        func cutoff(_ age: Duration?) -> PostgresValue? {
            age.map { .timestamptz(now.addingTimeInterval(-Double($0.components.seconds))) }
        }
        func walk(_ walk: PruneWalk, before cutoff: PostgresValue?, count: WritableKeyPath<Pruned, Int>) throws {
            guard let cutoff else { return }
            var after: Int64 = 0
            while true {
                let started = ContinuousClock.now
                let row = try connection.query(walk.sql, [.int64(after), .int64(Int64(batchSize)), cutoff])[0]
                pruned.batches += 1
                pruned.longestBatch = max(pruned.longestBatch, started.duration(to: .now))
                pruned[keyPath: count] += Int(try row["deleted"].int64() ?? 0)
                progress(pruned)
                guard let last = try row["last"].int64(), try row["past_cutoff"].bool() != true else { return }
                after = last
            }
        }
        try walk(.verifications, before: cutoff(policy.verifications), count: \.verifications)
        try walk(.schedulerNights, before: cutoff(policy.verifications), count: \.nights)
        // Ended deliveries first: their attempts go with them, leaving fewer for the attempts' walk.
        try walk(.webhookDeliveries, before: cutoff(policy.webhookLogs), count: \.webhookDeliveries)
        try walk(.webhookAttempts, before: cutoff(policy.webhookLogs), count: \.webhookAttempts)
        try walk(.events, before: cutoff(policy.events), count: \.events)
        try walk(.expiredReceipts(defaultBackend: defaultBackend), before: cutoff(policy.expiredReceipts), count: \.receipts)
        return pruned
    }
}

/// One statement per table that deletes, among the `$2` rows after key `$1`, those older than
/// `$3`, and answers `last` (the page's last key, NULL when there is none), `deleted`, and
/// `past_cutoff` (every row of the page is at or after the cutoff: keys follow time, so later
/// pages are newer still; rows a little out of order near the cutoff go on the next run).
struct PruneWalk {
    let sql: String

    /// A walk of `table` by `key`, whose rows' age is `time`, deleting those `deletable` allows
    /// (a condition on the table's row, aliased `t`).
    private init(table: String, key: String, time: String, deletable: String = "true") {
        sql = """
            WITH page AS (
                SELECT \(key) AS key, \(time) AS at FROM \(table) WHERE \(key) > $1 ORDER BY \(key) LIMIT $2
            ), deleted AS (
                DELETE FROM \(table) t USING page p WHERE t.\(key) = p.key AND p.at < $3 AND \(deletable) RETURNING 1
            )
            SELECT (SELECT max(key) FROM page) AS last, (SELECT count(*) FROM deleted) AS deleted,
                (SELECT bool_and(at >= $3) FROM page) AS past_cutoff
            """
    }

    static let verifications = PruneWalk(table: "verifications", key: "id", time: "attempted_at")
    static let webhookDeliveries = PruneWalk(
        table: "webhook_deliveries", key: "id", time: "coalesce(delivered_at, created_at)", deletable: "t.state <> 'pending'")
    static let webhookAttempts = PruneWalk(table: "webhook_attempts", key: "id", time: "attempted_at")
    static let schedulerNights = PruneWalk(table: "scheduler_nights", key: "id", time: "started_at")
    static let events = PruneWalk(table: "events", key: "seq", time: "created_at", deletable: """
        t.published_at IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = t.id AND d.state = 'pending')
        """)

    /// Receipts have no time of their own: the walk goes over all of them by subscription id and
    /// drops those of subscriptions expired (or refunded) before `$3`. A subscription verifyReceipt
    /// checks is no longer scheduled once its receipt is gone. Rows a worker holds are skipped.
    static func expiredReceipts(defaultBackend: VerificationBackend) -> PruneWalk {
        PruneWalk(sql: """
            WITH page AS (
                SELECT subscription_id AS key FROM receipts WHERE subscription_id > $1 ORDER BY subscription_id LIMIT $2
            ), doomed AS (
                SELECT s.id, s.backend FROM subscriptions s JOIN page p ON p.key = s.id
                WHERE s.status IN ('expired', 'refunded') AND s.expires_at < $3
                FOR UPDATE OF s SKIP LOCKED
            ), deleted AS (
                DELETE FROM receipts r USING doomed d WHERE r.subscription_id = d.id RETURNING 1
            ), unscheduled AS (
                UPDATE subscriptions s SET next_check_at = NULL
                FROM doomed d WHERE s.id = d.id AND coalesce(d.backend, '\(defaultBackend.rawValue)') = 'verify_receipt'
            )
            SELECT (SELECT max(key) FROM page) AS last, (SELECT count(*) FROM deleted) AS deleted, false AS past_cutoff
            """)
    }

    private init(sql: String) { self.sql = sql }
}
