import AppStore
import Foundation
import PostgresClient

/// The one statement that writes verification results: any number of them, each row of its
/// `jsonb` parameter one job's result. The inserts write only for the rows that the compare-and-set
/// UPDATE (`changed`) or the attempt-only UPDATE (`touched`) returned, so a write that lost the race
/// on `version` leaves no trace: no receipt, transaction, verification or event. A single
/// statement is a transaction of its own.
///
/// The subscription columns are projected from the `state` JSON, so they always agree with it.
/// Transactions are inserted once; only the facts Apple changes later (a refund's cancellation,
/// `is_upgraded`) are updated, and only when they differ. Events with an id already stored are
/// skipped, and new ones take `seq` in the order the analysis listed them.
///
/// It returns, per input row: `written_version` (NULL when not written) and `current_version`,
/// the row's version before the statement (NULL when the subscription does not exist).
///
/// `$2` lists the batch's subscription ids again, as an array: PostgreSQL guesses 100 rows for
/// `jsonb_to_recordset`, so against a table of some thousand subscriptions it hashed the batch and
/// scanned the whole table for 8 rows (0.35 ms of each batch at 1,000 subscriptions, growing with
/// the table); `s.id = ANY($2)` it counts exactly, and reads the 8 rows by their key.
enum PersistenceStatement {
    static let sql = """
        WITH input AS (
            SELECT * FROM jsonb_to_recordset($1) AS w(
                position integer, subscription_id bigint, expected_version bigint, state jsonb, receipt text,
                next_check_at timestamptz, transactions jsonb, events jsonb,
                attempted_at timestamptz, environment text, apple_status integer, http_status integer,
                outcome text, latency_ms integer, error text, run_id text, backend text)
        ),
        changed AS (
            UPDATE subscriptions s SET
                status = w.state->>'status',
                product_id = w.state->>'product_id',
                expires_at = (w.state->>'expires_at')::timestamptz,
                auto_renew = (w.state->>'auto_renew')::boolean,
                auto_renew_product_id = w.state->>'auto_renew_product_id',
                expiration_intent = (w.state->>'expiration_intent')::integer,
                grace_period_expires_at = (w.state->>'grace_period_expires_at')::timestamptz,
                is_trial = coalesce((w.state->>'is_trial')::boolean, false),
                is_intro_offer = coalesce((w.state->>'is_intro_offer')::boolean, false),
                ownership = w.state->>'ownership',
                chain_started_at = (w.state->>'chain_started_at')::timestamptz,
                environment = coalesce(w.state->>'environment', s.environment),
                state = w.state,
                last_verified_at = (w.state->>'verified_at')::timestamptz,
                last_outcome = w.outcome,
                next_check_at = w.next_check_at,
                version = s.version + 1,
                updated_at = now()
            FROM input w
            WHERE w.state IS NOT NULL AND s.id = ANY($2::bigint[]) AND s.id = w.subscription_id
                AND s.version = w.expected_version
            RETURNING s.id, s.version
        ),
        touched AS (
            UPDATE subscriptions s SET last_outcome = w.outcome, updated_at = now()
            FROM input w
            WHERE w.state IS NULL AND s.id = ANY($2::bigint[]) AND s.id = w.subscription_id
            RETURNING s.id, s.version
        ),
        receipt_replaced AS (
            INSERT INTO receipts AS r (subscription_id, receipt)
            SELECT w.subscription_id, w.receipt FROM input w JOIN changed ON changed.id = w.subscription_id
            WHERE w.receipt IS NOT NULL
            ON CONFLICT (subscription_id) DO UPDATE SET receipt = excluded.receipt, updated_at = now()
                WHERE r.receipt IS DISTINCT FROM excluded.receipt
        ),
        transactions_saved AS (
            INSERT INTO transactions AS t (
                transaction_id, subscription_id, original_transaction_id, product_id, purchased_at, expires_at,
                cancelled_at, cancellation_reason, is_trial, is_intro_offer, is_upgraded, web_order_line_item_id,
                ownership, offer_code_ref_name)
            SELECT n.transaction_id, w.subscription_id, n.original_transaction_id, n.product_id, n.purchased_at,
                n.expires_at, n.cancelled_at, n.cancellation_reason, n.is_trial, n.is_intro_offer, n.is_upgraded,
                n.web_order_line_item_id, n.ownership, n.offer_code_ref_name
            FROM input w JOIN changed ON changed.id = w.subscription_id,
                jsonb_to_recordset(w.transactions) AS n(
                    transaction_id text, original_transaction_id text, product_id text, purchased_at timestamptz,
                    expires_at timestamptz, cancelled_at timestamptz, cancellation_reason integer, is_trial boolean,
                    is_intro_offer boolean, is_upgraded boolean, web_order_line_item_id text, ownership text,
                    offer_code_ref_name text)
            ON CONFLICT (transaction_id) DO UPDATE SET
                cancelled_at = excluded.cancelled_at, cancellation_reason = excluded.cancellation_reason,
                is_upgraded = excluded.is_upgraded
                WHERE t.subscription_id = excluded.subscription_id
                  AND (t.cancelled_at, t.cancellation_reason, t.is_upgraded)
                      IS DISTINCT FROM (excluded.cancelled_at, excluded.cancellation_reason, excluded.is_upgraded)
        ),
        verification_logged AS (
            INSERT INTO verifications (
                subscription_id, run_id, attempted_at, judged_at, environment, apple_status, http_status, outcome,
                latency_ms, error, backend)
            SELECT w.subscription_id, w.run_id, w.attempted_at, (w.state->>'verified_at')::timestamptz, w.environment,
                w.apple_status, w.http_status, w.outcome, w.latency_ms, w.error, w.backend
            FROM input w
            WHERE w.subscription_id IN (SELECT id FROM changed UNION ALL SELECT id FROM touched)
        ),
        events_saved AS (
            INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
            SELECT (e.event->>'id')::uuid, w.subscription_id, e.event->>'original_transaction_id', e.event->>'type',
                e.event->'payload', (e.event->>'occurred_at')::timestamptz
            FROM input w JOIN changed ON changed.id = w.subscription_id,
                jsonb_array_elements(w.events) WITH ORDINALITY AS e(event, position)
            ORDER BY w.position, e.position
            ON CONFLICT (id) DO NOTHING
        )
        SELECT w.position, coalesce(changed.version, touched.version) AS written_version,
            (SELECT s.version FROM subscriptions s WHERE s.id = w.subscription_id) AS current_version
        FROM input w
        LEFT JOIN changed ON changed.id = w.subscription_id
        LEFT JOIN touched ON touched.id = w.subscription_id
        ORDER BY w.position
        """

    /// `sql`, prepared once per session: planning it cost a fifth of its time on every batch.
    static let prepared = PreparedStatement(name: "persist_verifications", sql: sql)

    /// The parameters: the rows as `jsonb`, then their subscription ids as an array. Rows go in
    /// subscription id order, so that concurrent batches lock their rows in the same order and do
    /// not deadlock; `position` keeps the callers'.
    static func parameters(_ writes: [VerificationWrite], schedule: CheckSchedule, nextNightlyRun: Date) throws
        -> [PostgresValue]
    {
        let rows = writes.enumerated().map { position, write in
            WriteRow(position: position, write: write, schedule: schedule, nextNightlyRun: nextNightlyRun)
        }.sorted { $0.subscriptionID < $1.subscriptionID }
        return [try Ledger.jsonb(rows), Ledger.idArray(rows.map(\.subscriptionID))]
    }

    /// Reads the outcome of each input row, in input order.
    static func outcomes(_ rows: [PostgresRow]) throws -> [WriteOutcome] {
        try rows.map { row in
            if let version = try row["written_version"].int64() { return .written(version: version) }
            return try row["current_version"].isNull ? .missing : .stale
        }
    }
}

/// One input row of the statement. Optional fields left nil are absent from the JSON, which
/// `jsonb_to_recordset` reads as NULL.
private struct WriteRow: Encodable {
    var position: Int
    var subscriptionID: Int64
    var expectedVersion: Int64?
    /// The state without the receipt: receipts live only in `receipts`.
    var state: SubscriptionState?
    var receipt: String?
    var nextCheckAt: Instant?
    var transactions: [TransactionRecord]?
    var events: [SubscriptionEvent]?
    var attemptedAt: Instant
    var environment: String?
    var appleStatus: Int?
    var httpStatus: Int?
    var outcome: String
    var latencyMs: Int?
    var error: String?
    var runID: String?
    var backend: String?

    init(position: Int, write: VerificationWrite, schedule: CheckSchedule, nextNightlyRun: Date) {
        self.position = position
        subscriptionID = write.subscriptionID
        if let change = write.change {
            var state = change.analysis.state
            receipt = state.latestReceipt?.base64
            state.latestReceipt = nil
            self.state = state
            expectedVersion = change.expectedVersion
            nextCheckAt = schedule.nextCheck(
                for: state, now: state.verifiedAt.date, nextNightlyRun: nextNightlyRun, auditSlot: write.subscriptionID)
                .map(Instant.init)
            transactions = change.analysis.transactions
            events = change.analysis.events
        }
        let attempt = write.attempt
        attemptedAt = Instant(attempt.attemptedAt)
        environment = attempt.environment?.rawValue
        appleStatus = attempt.appleStatus
        httpStatus = attempt.httpStatus
        outcome = attempt.outcome.rawValue
        latencyMs = attempt.latencyMilliseconds
        error = attempt.error
        runID = attempt.runID
        backend = attempt.backend?.rawValue
    }

    enum CodingKeys: String, CodingKey {
        case position, state, receipt, transactions, events, environment, outcome, error, backend
        case subscriptionID = "subscription_id"
        case expectedVersion = "expected_version"
        case nextCheckAt = "next_check_at"
        case attemptedAt = "attempted_at"
        case appleStatus = "apple_status"
        case httpStatus = "http_status"
        case latencyMs = "latency_ms"
        case runID = "run_id"
    }
}
