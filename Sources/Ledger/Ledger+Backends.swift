import AppStore
import PostgresClient

/// Which subscriptions a backend move is about: all of them, narrowed by any of these.
public struct BackendSelection: Sendable {
    public var ids: [Int64]?
    public var app: String?
    public var environment: AppStoreEnvironment?
    /// Only those on this backend now (nil: any); `following default` matches NULL.
    public var currentBackend: VerificationBackend??

    public init(
        ids: [Int64]? = nil, app: String? = nil, environment: AppStoreEnvironment? = nil,
        currentBackend: VerificationBackend?? = nil
    ) {
        self.ids = ids
        self.app = app
        self.environment = environment
        self.currentBackend = currentBackend
    }
}

/// What one page of a backend move did.
public struct BackendMovePage: Sendable {
    public var moved: Int
    /// Subscriptions that stay where they are because they have no stored receipt, so
    /// verifyReceipt could not ask about them (a StoreKit 2 app's).
    public var withoutReceipt: Int
    /// Pass it back as `after` for the next page; nil when this was the last.
    public var next: Int64?
}

extension Ledger {
    /// Moves the selected subscriptions to `backend` (nil: the deployment's default), one page of
    /// `limit` ids from `after` on: the state, the version and the schedule stay as they are, so a
    /// job in flight still writes its answer, and the next check asks the new backend, starting
    /// from what the old one last told. A subscription without a receipt never moves to
    /// verifyReceipt. Each page is one short transaction, so a million-row move locks no more
    /// than `limit` rows at a time.
    /// With `dryRun`, counts what would move and moves nothing.
    public func moveBackend(
        to backend: VerificationBackend?, _ selection: BackendSelection, after: Int64 = 0, limit: Int = 5_000, dryRun: Bool = false
    ) throws -> BackendMovePage {
        var conditions = ["s.id > $1"]
        var parameters: [PostgresValue] = [.int64(after), .int64(Int64(limit)), backend.map { .text($0.rawValue) } ?? .null]
        func parameter(_ value: PostgresValue) -> String {
            parameters.append(value)
            return "$\(parameters.count)"
        }
        if let ids = selection.ids { conditions.append("s.id = ANY(\(parameter(Self.idArray(ids)))::bigint[])") }
        if let app = selection.app { conditions.append("s.app = \(parameter(.text(app)))") }
        if let environment = selection.environment { conditions.append("s.environment = \(parameter(.text(environment.rawValue)))") }
        switch selection.currentBackend {
        case .none: break
        case .some(.none): conditions.append("s.backend IS NULL")
        case .some(.some(let current)): conditions.append("s.backend = \(parameter(.text(current.rawValue)))")
        }
        // verifyReceipt needs a receipt: NULL may mean it too, so only the Server API goes without.
        let receiptNeeded = backend == .serverAPI ? "false" : "NOT EXISTS (SELECT 1 FROM receipts r WHERE r.subscription_id = s.id)"
        let row = try connection.query("""
            WITH page AS (
                SELECT s.id, \(receiptNeeded) AS without_receipt FROM subscriptions s
                WHERE \(conditions.joined(separator: " AND ")) ORDER BY s.id LIMIT $2
            ), moved AS (
                \(dryRun ? "SELECT s.id FROM subscriptions s JOIN page USING (id)" : "UPDATE subscriptions s SET backend = $3 FROM page")
                WHERE s.id = page.id AND NOT page.without_receipt AND s.backend IS DISTINCT FROM $3::text
                \(dryRun ? "" : "RETURNING s.id")
            )
            SELECT (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM page WHERE without_receipt) AS without_receipt,
                (SELECT count(*) FROM page) AS seen, (SELECT max(id) FROM page) AS last
            """, parameters).first
        let seen = Int(try row?["seen"].int64() ?? 0)
        return BackendMovePage(
            moved: Int(try row?["moved"].int64() ?? 0), withoutReceipt: Int(try row?["without_receipt"].int64() ?? 0),
            next: seen < limit ? nil : try row?["last"].int64())
    }
}
