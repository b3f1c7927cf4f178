import PostgresClient

/// Whose data `Ledger.forget` deletes.
public enum ForgetTarget: Sendable, Equatable, CustomStringConvertible {
    /// One subscription, by the fleet's id.
    case subscription(id: Int64)
    /// Every subscription with this original_transaction_id (of one app, when given).
    case originalTransaction(id: String, app: String?)
    /// Everything linked to one account of an app: its subscriptions, its one-time purchases and
    /// its claims waiting for Apple's proof.
    case account(id: String, app: String)

    /// How the audit trail names it.
    public var description: String {
        switch self {
        case .subscription(let id): "subscription \(id)"
        case .originalTransaction(let id, let app): "original_transaction_id=\(id)" + (app.map { " app=\($0)" } ?? "")
        case .account(let id, let app): "account=\(id) app=\(app)"
        }
    }
}

/// What `Ledger.forget` deleted, by the fleet's ids.
public struct Forgotten: Sendable, Equatable, CustomStringConvertible {
    public var subscriptions: [Int64]
    public var purchases: [Int64]
    /// Account claims deleted (an account's claims on subscriptions not linked to it).
    public var claims: Int

    public var isEmpty: Bool { subscriptions.isEmpty && purchases.isEmpty && claims == 0 }

    /// How many of each went, as the audit trail records a forget.
    public var auditDetails: [String: String] {
        ["subscriptions": "\(subscriptions.count)", "purchases": "\(purchases.count)", "claims": "\(claims)"]
    }

    /// In words, as `subscriptions forget` says it: how many of each, and the subscriptions' ids.
    public var description: String {
        var parts = ["\(subscriptions.count) subscription(s)" + (subscriptions.isEmpty ? "" : " (\(subscriptions.map(String.init).joined(separator: ", ")))")]
        if !purchases.isEmpty { parts.append("\(purchases.count) one-time purchase(s)") }
        if claims > 0 { parts.append("\(claims) pending claim(s)") }
        return parts.joined(separator: ", ")
    }
}

extension Ledger {
    /// Deletes a customer's data, in one transaction: the subscriptions' rows (state and account
    /// link), receipts, transactions, verification attempts, notifications and claims; every event
    /// of theirs, published or not, with its webhook deliveries; for an account, its one-time
    /// purchases and their events too. Each deleted subscription (purchase) leaves one tombstone
    /// event, `subscription_forgotten` (`purchase_forgotten`), which the relay publishes like any
    /// other, so that consumers delete their copies. Forgetting what is gone deletes nothing and
    /// announces nothing.
    ///
    /// The subscriptions' rows are locked first, so a worker writing one meanwhile either commits
    /// before (and its new events are deleted too) or finds the subscription gone and writes nothing.
    /// With `dryRun`, the transaction is rolled back: what it would delete, and nothing deleted.
    public func forget(_ target: ForgetTarget, dryRun: Bool = false) throws -> Forgotten {
        struct RolledBack: Error { let forgotten: Forgotten }
        do {
            return try connection.transaction { connection in
                let forgotten = try Self.forget(target, on: connection)
                if dryRun { throw RolledBack(forgotten: forgotten) }
                return forgotten
            }
        } catch let rolledBack as RolledBack {
            return rolledBack.forgotten
        }
    }

    private static func forget(_ target: ForgetTarget, on connection: PostgresConnection) throws -> Forgotten {
        let (condition, parameters): (String, [PostgresValue]) = switch target {
        case .subscription(let id): ("id = $1", [.int64(id)])
        case .originalTransaction(let id, let app):
            ("original_transaction_id = $1 AND ($2::text IS NULL OR app = $2)", [.text(id), app.map { .text($0) } ?? .null])
        case .account(let id, let app): ("account_id = $1 AND app = $2", [.text(id), .text(app)])
        }
        // Locked in a statement of their own: the deletions' statement then starts after any write
        // that held a row, and its snapshot sees what that write committed.
        let chosen = try connection.query("SELECT id FROM subscriptions WHERE \(condition) ORDER BY id FOR UPDATE", parameters)
        let subscriptions = try connection.query(forgetSubscriptions, [idArray(try chosen.map { try $0["id"].int64() ?? 0 })])
            .map { try $0["id"].int64() ?? 0 }
        guard case .account(let account, let app) = target else {
            return Forgotten(subscriptions: subscriptions, purchases: [], claims: 0)
        }
        let chosenPurchases = try connection.query(
            "SELECT id FROM purchases WHERE account_id = $1 AND app = $2 ORDER BY id FOR UPDATE", [.text(account), .text(app)])
        let purchases = try connection.query(forgetPurchases, [idArray(try chosenPurchases.map { try $0["id"].int64() ?? 0 })])
            .map { try $0["id"].int64() ?? 0 }
        let claims = try connection.query("""
            DELETE FROM account_claims c USING subscriptions s
            WHERE c.subscription_id = s.id AND c.account_id = $1 AND s.app = $2 RETURNING c.id
            """, [.text(account), .text(app)]).count
        return Forgotten(subscriptions: subscriptions, purchases: purchases, claims: claims)
    }

    /// The tombstone's payload: the fields every payload carries (docs/events.md), as far as the
    /// deleted row knows them, and its app. `$row` is the deleted row.
    private static func tombstonePayload(_ row: String, group: String, trial: String, intro: String) -> String {
        """
        jsonb_build_object('app', \(row).app, 'environment', \(row).environment, 'ownership', \(row).ownership,
            'subscription_group_identifier', \(group), 'is_trial', \(trial), 'is_intro_offer', \(intro),
            'offer_code_ref_name', NULL, 'promotional_offer_id', NULL)
        """
    }

    /// Deletes the locked subscriptions `$1` with everything of theirs and leaves a tombstone for
    /// each; returns their ids. One statement, so the tombstones are not among the events it deletes.
    private static let forgetSubscriptions = """
        WITH events_deleted AS (
            DELETE FROM events WHERE subscription_id = ANY ($1::bigint[])
        ), notifications_deleted AS (
            -- Those matched to the subscription, and those of its original_transaction_id that came
            -- before it was registered (unknown_subscription): they name it too.
            DELETE FROM notifications WHERE subscription_id = ANY ($1::bigint[])
                OR original_transaction_id IN (SELECT original_transaction_id FROM subscriptions WHERE id = ANY ($1::bigint[]))
        ), gone AS (
            -- Receipts, transactions, attempts and claims go with the row (ON DELETE CASCADE).
            DELETE FROM subscriptions s WHERE s.id = ANY ($1::bigint[])
            RETURNING s.id, s.app, s.original_transaction_id, s.environment, s.ownership, s.state, s.is_trial, s.is_intro_offer
        ), tombstones AS (
            INSERT INTO events (id, subscription_id, original_transaction_id, type, payload, occurred_at)
            SELECT gen_random_uuid(), g.id, g.original_transaction_id, 'subscription_forgotten',
                \(tombstonePayload("g", group: "g.state->>'subscription_group_identifier'", trial: "g.is_trial", intro: "g.is_intro_offer")),
                now()
            FROM gone g ORDER BY g.id
        )
        SELECT id FROM gone ORDER BY id
        """

    /// The same for the locked one-time purchases `$1`.
    private static let forgetPurchases = """
        WITH events_deleted AS (
            DELETE FROM events WHERE purchase_id = ANY ($1::bigint[])
        ), gone AS (
            DELETE FROM purchases p WHERE p.id = ANY ($1::bigint[])
            RETURNING p.id, p.app, p.original_transaction_id, p.environment, p.ownership
        ), tombstones AS (
            INSERT INTO events (id, purchase_id, original_transaction_id, type, payload, occurred_at)
            SELECT gen_random_uuid(), g.id, g.original_transaction_id, 'purchase_forgotten',
                \(tombstonePayload("g", group: "NULL", trial: "NULL", intro: "NULL")), now()
            FROM gone g ORDER BY g.id
        )
        SELECT id FROM gone ORDER BY id
        """
}
