import AppStore
import PostgresClient

/// What Apple's answer about a queued registration's receipt (`QueuedClaim`) settled. Every claim
/// made with the same receipt (the same digest) is settled with it.
public enum ClaimJudgement: Sendable, Equatable {
    /// The answer shows the subscription: the earliest claim's account is linked (if none is yet),
    /// and the receipt is stored for the subscription if it has none.
    case proven(ReceiptData)
    /// The answer does not show the subscription (junk, another subscription's receipt, another
    /// app's): the claims are refused with `reason` and their receipt dropped; nothing else changes.
    /// `orphan`: nothing else can ever be checked for the subscription (no receipt, no state, no
    /// other claim), so it leaves the nightly schedule until someone registers it.
    case refuted(receiptSHA256: String, reason: String, orphan: Bool)
    /// The call its attempt was taken for got no answer to judge by (Apple unavailable, the fleet
    /// pausing): the attempt is given back (`takeClaimAttempt`).
    case givenBack(receiptSHA256: String)
}

/// What a registration that must be queued did to the subscription's claims.
public enum ClaimRecording: Sendable, Equatable {
    case claimed
    /// The subscription already holds `Ledger.pendingClaimsPerSubscription` claims Apple has not
    /// judged: this one is not kept (the caller registers again once Apple can be asked).
    case tooManyPending
}

extension Ledger {
    /// The claims one subscription may hold unjudged: a customer registering again while Apple
    /// cannot be asked repeats a claim (same account, same receipt) rather than adding one, so more
    /// than a few different ones are strangers' junk, each costing Apple calls to judge.
    public static let pendingClaimsPerSubscription = 5

    /// Records that a registration queued while Apple could not be asked names the subscription,
    /// for `accountID` (nil: no account named), with `receipt`, kept until Apple judges it, unless
    /// the subscription already holds `pendingClaimsPerSubscription` others. Links nothing.
    /// Repeating it is harmless; repeating a refused one has it judged again. The subscription's
    /// row is locked meanwhile, so concurrent registrations cannot pass the bound together.
    public func claimSubscription(_ subscriptionID: Int64, accountID: String?, receipt: ReceiptData) throws -> ClaimRecording {
        try connection.transaction { connection in
            let others = try connection.query("""
                SELECT count(*) AS n FROM account_claims
                WHERE subscription_id = (SELECT id FROM subscriptions WHERE id = $1 FOR UPDATE)
                  AND resolved_at IS NULL AND (account_id, receipt_sha256) IS DISTINCT FROM ($2, $3)
                """, [.int64(subscriptionID), accountID.map(PostgresValue.text) ?? .null, .text(receipt.sha256Hex)])
            guard try (others.first?["n"].int64() ?? 0) < Self.pendingClaimsPerSubscription else { return .tooManyPending }
            try connection.execute("""
                INSERT INTO account_claims AS c (subscription_id, account_id, receipt_sha256, receipt) VALUES ($1, $2, $3, $4)
                ON CONFLICT (subscription_id, account_id, receipt_sha256) DO UPDATE
                    SET receipt = excluded.receipt, resolved_at = NULL, refuted = NULL, attempts = 0, claimed_at = now()
                    WHERE c.refuted IS NOT NULL
                """, [.int64(subscriptionID), accountID.map(PostgresValue.text) ?? .null, .text(receipt.sha256Hex),
                      .text(receipt.base64)])
            return .claimed
        }
    }

    /// Takes one of the `limit` calls a claim's receipt may cost before Apple judges it, for every
    /// unjudged claim made with it, if its count is still the `seen` one the caller loaded. Returns
    /// the attempt's number (1 for the first), or nil when its claims are judged, their calls all
    /// taken, or another worker took one since `seen` (and judges it now): so jobs that load the
    /// claim together ask Apple once between them, and however many reach it, at most `limit` times in all.
    public func takeClaimAttempt(of subscriptionID: Int64, receiptSHA256: String, seen: Int, limit: Int) throws -> Int? {
        try connection.query("""
            UPDATE account_claims SET attempts = attempts + 1
            WHERE subscription_id = $1 AND receipt_sha256 = $2 AND resolved_at IS NULL AND attempts = $3 AND attempts < $4
            RETURNING attempts
            """, [.int64(subscriptionID), .text(receiptSHA256), .int64(Int64(seen)), .int64(Int64(limit))])
            .compactMap { try $0["attempts"].int64().map(Int.init) }.max()
    }

    /// Settles the unresolved claims of `subscriptionID` made with the receipt Apple judged. Returns
    /// the subscription's account afterwards.
    @discardableResult
    public func judgeClaims(of subscriptionID: Int64, _ judgement: ClaimJudgement) throws -> String? {
        try connection.transaction { connection in
            switch judgement {
            case .proven(let receipt):
                let proven = try connection.query("""
                    UPDATE account_claims SET resolved_at = now(), receipt = NULL
                    WHERE subscription_id = $1 AND receipt_sha256 = $2 AND resolved_at IS NULL
                    RETURNING account_id, claimed_at
                    """, [.int64(subscriptionID), .text(receipt.sha256Hex)])
                let first = try proven.filter { try $0["account_id"].text() != nil }
                    .min { try ($0["claimed_at"].timestamptz() ?? .distantFuture) < ($1["claimed_at"].timestamptz() ?? .distantFuture) }
                if let account = try first?["account_id"].text() {
                    try connection.execute(
                        "UPDATE subscriptions SET account_id = $2, updated_at = now() WHERE id = $1 AND account_id IS NULL",
                        [.int64(subscriptionID), .text(account)])
                }
                // Apple's answer brings its own latest receipt, stored with the state; one that did not keeps this one.
                try connection.execute(
                    "INSERT INTO receipts (subscription_id, receipt) VALUES ($1, $2) ON CONFLICT (subscription_id) DO NOTHING",
                    [.int64(subscriptionID), .text(receipt.base64)])
            case .refuted(let digest, let reason, let orphan):
                try connection.execute("""
                    UPDATE account_claims SET resolved_at = now(), receipt = NULL, refuted = $3
                    WHERE subscription_id = $1 AND receipt_sha256 = $2 AND resolved_at IS NULL
                    """, [.int64(subscriptionID), .text(digest), .text(reason)])
                if orphan {
                    try connection.execute(
                        "UPDATE subscriptions SET next_check_at = NULL, updated_at = now() WHERE id = $1 AND state IS NULL",
                        [.int64(subscriptionID)])
                }
            case .givenBack(let digest):
                try connection.execute("""
                    UPDATE account_claims SET attempts = attempts - 1
                    WHERE subscription_id = $1 AND receipt_sha256 = $2 AND resolved_at IS NULL AND attempts > 0
                    """, [.int64(subscriptionID), .text(digest)])
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
