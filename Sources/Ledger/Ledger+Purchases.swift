import AppStore
import Foundation
import PostgresClient

/// The one-time purchases a verification found, to record: with a subscription's write
/// (`VerificationWrite.purchases`), or, when they belong to none (a registered receipt's), beside
/// the writes (`recordPurchases`, which the verification use case calls through its store).
public struct PurchaseWrite: Sendable {
    public var app: String
    public var found: OneTimePurchases
    /// A purchase the ledger does not have is announced (`non_renewing_purchase`) only if bought
    /// after this: when the fleet last read the receipt, or at registration the start of the
    /// initial-purchase window. nil announces none (a first sight is a baseline).
    public var announcingPurchasesAfter: Instant?
    /// The customer: linked to each purchase that has no account yet, never moved.
    public var accountID: String?

    public init(app: String, found: OneTimePurchases, announcingPurchasesAfter: Instant?, accountID: String?) {
        self.app = app
        self.found = found
        self.announcingPurchasesAfter = announcingPurchasesAfter
        self.accountID = accountID
    }
}

/// A one-time purchase as the ledger holds it.
public struct PurchaseRecord: Sendable {
    public var id: Int64
    public var app: String
    public var accountID: String?
    public var purchase: Purchase
    public var lastVerifiedAt: Date
}

/// What `recordPurchases` stored.
public struct RecordedPurchases: Sendable {
    /// Every purchase of the write, as stored now, oldest purchase first.
    public var records: [PurchaseRecord]
    /// The transaction ids the ledger did not have before.
    public var created: Set<String>

    public init(records: [PurchaseRecord], created: Set<String>) {
        self.records = records
        self.created = created
    }
}

extension Ledger {
    /// Records one-time purchases and their events in one transaction: idempotent (a purchase is
    /// one row per app and transaction id; an event id already stored is skipped).
    public func recordPurchases(_ write: PurchaseWrite) throws -> RecordedPurchases {
        try connection.transaction { try Self.record(write, on: $0) }
    }

    /// `recordPurchases` inside the caller's transaction. The stored purchases are read under a
    /// row lock, so two writers that found the same refund cannot both miss the other's write.
    static func record(_ write: PurchaseWrite, on connection: PostgresConnection) throws -> RecordedPurchases {
        guard !write.found.purchases.isEmpty else { return RecordedPurchases(records: [], created: []) }
        let stored = try connection.query("""
            SELECT \(columns) FROM purchases
            WHERE app = $1 AND transaction_id IN (SELECT jsonb_array_elements_text($2))
            FOR UPDATE
            """, [.text(write.app), try jsonb(write.found.transactionIDs)]
        ).map(purchaseRecord)
        let analysis = write.found.analyze(
            stored: stored.map(\.purchase), announcingPurchasesAfter: write.announcingPurchasesAfter)
        let records = try connection.query(upsert, [
            .text(write.app), try jsonb(analysis.purchases), write.accountID.map(PostgresValue.text) ?? .null,
            try jsonb(analysis.events), write.found.readAt.map { .timestamptz($0.date) } ?? .null,
        ]).map(purchaseRecord)
        let order = Dictionary(uniqueKeysWithValues: write.found.transactionIDs.enumerated().map { ($1, $0) })
        return RecordedPurchases(
            records: records.sorted { order[$0.purchase.transactionID, default: 0] < order[$1.purchase.transactionID, default: 0] },
            created: Set(write.found.transactionIDs).subtracting(stored.map(\.purchase.transactionID)))
    }

    /// The purchases linked to the app's account `accountID`, oldest first.
    public func purchases(accountID: String, app: String = "default") throws -> [PurchaseRecord] {
        try connection.query(
            "SELECT \(Self.columns) FROM purchases WHERE app = $1 AND account_id = $2 ORDER BY purchased_at, id",
            [.text(app), .text(accountID)]
        ).map(Self.purchaseRecord)
    }

    /// The app's purchase with this transaction id, if the ledger has it.
    public func purchase(transactionID: String, app: String = "default") throws -> PurchaseRecord? {
        try connection.query(
            "SELECT \(Self.columns) FROM purchases WHERE app = $1 AND transaction_id = $2",
            [.text(app), .text(transactionID)]
        ).map(Self.purchaseRecord).first
    }

    private static let columns = """
        id, app, transaction_id, original_transaction_id, account_id, product_id, quantity, ownership, environment,
        purchased_at, cancelled_at, cancellation_reason, last_verified_at
        """

    /// Inserts new purchases and updates what Apple changes later (a refund, its reversal), linking
    /// the account where none is linked, stamped with the moment Apple judged ($5; the clock when
    /// the answer has none); then the events, each joined to its purchase's row. $2 holds the
    /// purchases as `Purchase` encodes itself (its status, and its cancellation as an object).
    private static let upsert = """
        WITH input AS (
            SELECT p.*, (p.cancellation->>'cancelled_at')::timestamptz AS cancelled_at,
                (p.cancellation->>'reason')::integer AS cancellation_reason
            FROM jsonb_to_recordset($2) AS p(
                transaction_id text, original_transaction_id text, product_id text, quantity integer, ownership text,
                environment text, status text, purchased_at timestamptz, cancellation jsonb)
        ),
        saved AS (
            INSERT INTO purchases AS s (
                app, transaction_id, original_transaction_id, account_id, product_id, quantity, ownership, environment,
                status, purchased_at, cancelled_at, cancellation_reason, last_verified_at)
            SELECT $1, p.transaction_id, p.original_transaction_id, $3, p.product_id, p.quantity, p.ownership,
                coalesce(p.environment, 'Production'), p.status,
                p.purchased_at, p.cancelled_at, p.cancellation_reason, coalesce($5::timestamptz, now())
            FROM input p
            ON CONFLICT (app, transaction_id) DO UPDATE SET
                account_id = coalesce(s.account_id, excluded.account_id),
                status = excluded.status, cancelled_at = excluded.cancelled_at,
                cancellation_reason = excluded.cancellation_reason, ownership = coalesce(excluded.ownership, s.ownership),
                last_verified_at = excluded.last_verified_at, updated_at = now()
            RETURNING s.*
        ),
        events_saved AS (
            INSERT INTO events (id, purchase_id, original_transaction_id, type, payload, occurred_at)
            SELECT (e.event->>'id')::uuid, saved.id, e.event->>'original_transaction_id', e.event->>'type',
                e.event->'payload', (e.event->>'occurred_at')::timestamptz
            FROM jsonb_array_elements($4) WITH ORDINALITY AS e(event, position)
            JOIN saved ON saved.transaction_id = e.event->'payload'->>'transaction_id'
            ORDER BY e.position
            ON CONFLICT (id) DO NOTHING
        )
        SELECT \(columns) FROM saved
        """

    private static func purchaseRecord(_ row: PostgresRow) throws -> PurchaseRecord {
        let cancelledAt = try row["cancelled_at"].timestamptz().map(Instant.init)
        let purchase = try Purchase(
            transactionID: row["transaction_id"].text() ?? "", originalTransactionID: row["original_transaction_id"].text() ?? "",
            productID: row["product_id"].text(), purchasedAt: row["purchased_at"].timestamptz().map(Instant.init),
            quantity: row["quantity"].int64().map { Int($0) },
            ownership: row["ownership"].text().flatMap(OwnershipType.init(rawValue:)),
            environment: row["environment"].text().flatMap(AppStoreEnvironment.init(rawValue:)),
            cancellation: cancelledAt.map { Cancellation(cancelledAt: $0, reason: try row["cancellation_reason"].int64().map { Int($0) }) })
        return try PurchaseRecord(
            id: row["id"].int64() ?? 0, app: row["app"].text() ?? "", accountID: row["account_id"].text(), purchase: purchase,
            lastVerifiedAt: row["last_verified_at"].timestamptz() ?? .distantPast)
    }
}
