import PostgresClient

extension Ledger {
    /// Links each subscription that has no account yet to `accountID`, and returns the account
    /// each one is linked to afterwards (by id): `accountID` for those just linked or already
    /// its own, another id for a subscription an earlier registration linked elsewhere (the
    /// restore case, which is reported, never silently moved). Unknown ids are left out.
    public func linkAccount(_ accountID: String, to subscriptionIDs: [Int64], app: String = "default") throws -> [Int64: String] {
        let rows = try connection.query("""
            WITH linked AS (
                UPDATE subscriptions SET account_id = $2, updated_at = now()
                WHERE id = ANY($1::bigint[]) AND app = $3 AND account_id IS NULL
                RETURNING id, account_id
            )
            SELECT id, account_id FROM linked
            UNION ALL
            SELECT id, account_id FROM subscriptions
            WHERE id = ANY($1::bigint[]) AND app = $3 AND account_id IS NOT NULL AND id NOT IN (SELECT id FROM linked)
            """, [Self.idArray(subscriptionIDs), .text(accountID), .text(app)])
        var accounts: [Int64: String] = [:]
        for row in rows {
            if let id = try row["id"].int64(), let account = try row["account_id"].text() { accounts[id] = account }
        }
        return accounts
    }

    /// The subscriptions linked to the app's account `accountID`, oldest first.
    public func subscriptions(accountID: String, app: String = "default") throws -> [SubscriptionRecord] {
        try records(where: "app = $1 AND account_id = $2", [.text(app), .text(accountID)])
    }

    /// The app's subscription with this original_transaction_id, if the ledger has it.
    public func subscription(originalTransactionID: String, app: String) throws -> SubscriptionRecord? {
        try records(where: "app = $1 AND original_transaction_id = $2", [.text(app), .text(originalTransactionID)]).first
    }
}
