import AppStore
import PostgresClient

/// A subscription to start watching: one original_transaction_id of one app, and its receipt
/// (none for a StoreKit 2 app's, which only the Server API can verify: then `backend` says so).
/// Encodable as a row of the insert's `jsonb` parameter.
public struct NewSubscription: Sendable, Encodable {
    public var app: String
    public var originalTransactionID: String
    public var environment: AppStoreEnvironment
    public var receipt: ReceiptData?
    /// Nil follows the deployment's default.
    public var backend: VerificationBackend?
    /// The company's own id for the customer, to find their subscriptions by.
    public var accountID: String?

    public init(
        app: String = "default", originalTransactionID: String, environment: AppStoreEnvironment = .production,
        receipt: ReceiptData?, accountID: String? = nil, backend: VerificationBackend? = nil
    ) {
        self.app = app
        self.originalTransactionID = originalTransactionID
        self.environment = environment
        self.receipt = receipt
        self.accountID = accountID
        self.backend = backend
    }

    enum CodingKeys: String, CodingKey {
        case app, environment, receipt, backend
        case originalTransactionID = "original_transaction_id"
        case accountID = "account_id"
    }
}

extension Ledger {
    /// Adds the subscriptions not yet present, unverified and due at once, each with its receipt;
    /// leaves those present (same app and original_transaction_id) as they are, receipt included,
    /// since the fleet's own receipt is the newer one. One statement per `batchSize` subscriptions,
    /// each its own transaction, so running the same import again finishes one that was cut short.
    /// - Returns: how many were added, and how many were already present (or repeated in the input).
    @discardableResult
    public func addSubscriptions(
        _ subscriptions: [NewSubscription], batchSize: Int = 1000
    ) throws -> (inserted: Int, alreadyPresent: Int) {
        let size = max(batchSize, 1)
        var inserted = 0
        for start in stride(from: 0, to: subscriptions.count, by: size) {
            let batch = subscriptions[start..<min(start + size, subscriptions.count)]
            let rows = try connection.query(Self.insertSubscriptions, [Self.jsonb(Array(batch))])
            inserted += Int(try rows[0]["inserted"].int64() ?? 0)
        }
        return (inserted, subscriptions.count - inserted)
    }

    private static let insertSubscriptions = """
        WITH input AS (
            SELECT DISTINCT ON (app, original_transaction_id) *
            FROM jsonb_to_recordset($1) AS n(
                app text, original_transaction_id text, environment text, receipt text, account_id text, backend text)
        ),
        added AS (
            INSERT INTO subscriptions (app, original_transaction_id, environment, account_id, backend)
            SELECT app, original_transaction_id, environment, account_id, backend FROM input
            ON CONFLICT (app, original_transaction_id) DO NOTHING
            RETURNING id, app, original_transaction_id
        ),
        receipts_added AS (
            INSERT INTO receipts (subscription_id, receipt)
            SELECT added.id, input.receipt FROM added JOIN input USING (app, original_transaction_id)
            WHERE input.receipt IS NOT NULL
        )
        SELECT count(*) AS inserted FROM added
        """
}
