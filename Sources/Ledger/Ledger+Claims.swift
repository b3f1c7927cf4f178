import PostgresClient

extension Ledger {
    /// Records that `accountID` claims the subscription with a receipt Apple has not been asked
    /// about yet (`receiptSHA256`, the digest of its base64 text). Links nothing; repeating it is harmless.
    public func claimAccount(_ accountID: String, for subscriptionID: Int64, receiptSHA256: String) throws {
        try connection.execute("""
            INSERT INTO account_claims (subscription_id, account_id, receipt_sha256) VALUES ($1, $2, $3)
            ON CONFLICT DO NOTHING
            """, [.int64(subscriptionID), .text(accountID), .text(receiptSHA256)])
    }

    /// Apple's answer for the receipt with digest `receiptSHA256` showed the subscription: the
    /// pending claims made with that receipt are proven. The earliest links its account (if the
    /// subscription has none yet; a link is never moved), and all of them are resolved. Returns
    /// the subscription's account afterwards.
    @discardableResult
    public func resolveClaims(of subscriptionID: Int64, receiptSHA256: String) throws -> String? {
        try connection.transaction { connection in
            let proven = try connection.query("""
                UPDATE account_claims SET resolved_at = now()
                WHERE subscription_id = $1 AND receipt_sha256 = $2 AND resolved_at IS NULL
                RETURNING account_id, claimed_at
                """, [.int64(subscriptionID), .text(receiptSHA256)])
            let first = try proven.min { try ($0["claimed_at"].timestamptz() ?? .distantFuture) < ($1["claimed_at"].timestamptz() ?? .distantFuture) }
            if let account = try first?["account_id"].text() {
                try connection.execute(
                    "UPDATE subscriptions SET account_id = $2, updated_at = now() WHERE id = $1 AND account_id IS NULL",
                    [.int64(subscriptionID), .text(account)])
            }
            return try connection.query("SELECT account_id FROM subscriptions WHERE id = $1", [.int64(subscriptionID)])
                .first?["account_id"].text()
        }
    }

    /// The subscriptions `accountID` claims and Apple has not yet shown to be its own.
    public func pendingClaims(accountID: String, app: String = "default") throws -> [Int64] {
        try connection.query("""
            SELECT DISTINCT c.subscription_id FROM account_claims c JOIN subscriptions s ON s.id = c.subscription_id
            WHERE c.account_id = $1 AND c.resolved_at IS NULL AND s.app = $2
              AND s.account_id IS DISTINCT FROM c.account_id
            ORDER BY 1
            """, [.text(accountID), .text(app)]).compactMap { try $0["subscription_id"].int64() }
    }
}
