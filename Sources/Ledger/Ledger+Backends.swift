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

/// What a backend move did.
public struct BackendMove: Sendable {
    public var moved = 0
    /// Subscriptions that stay where they are because they have no stored receipt, so
    /// verifyReceipt could not ask about them (a StoreKit 2 app's).
    public var withoutReceipt = 0
    /// The pages (short transactions) it took.
    public var pages = 0
}

extension Ledger {
    /// Moves the selected subscriptions to `backend` (nil: the deployment's default), a page of
    /// `pageSize` ids at a time, each page one short transaction, so a million-row move locks no
    /// more than a page of rows at once and can be stopped and run again. Only the backend
    /// changes: the state, the version and the schedule stay, so a job in flight still writes its
    /// answer, and the next check asks the new backend, starting from what the old one last told.
    /// A subscription without a receipt never moves to verifyReceipt. With `dryRun`, counts what
    /// would move and moves nothing. `afterEachPage` sees the totals so far (for progress).
    public func moveBackend(
        to backend: VerificationBackend?, _ selection: BackendSelection, pageSize: Int = 5_000, dryRun: Bool = false,
        afterEachPage: (BackendMove) -> Void = { _ in }
    ) throws -> BackendMove {
        var total = BackendMove()
        var after: Int64? = 0
        while let from = after {
            let page = try moveBackendPage(to: backend, selection, after: from, limit: pageSize, dryRun: dryRun)
            total.moved += page.moved
            total.withoutReceipt += page.withoutReceipt
            total.pages += 1
            after = page.next
            afterEachPage(total)
        }
        return total
    }

    /// One page of `moveBackend`: the selected ids after `after`, `limit` of them; `next` is where
    /// the following page starts, nil after the last.
    private func moveBackendPage(
        to backend: VerificationBackend?, _ selection: BackendSelection, after: Int64, limit: Int, dryRun: Bool
    ) throws -> (moved: Int, withoutReceipt: Int, next: Int64?) {
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
        return (Int(try row?["moved"].int64() ?? 0), Int(try row?["without_receipt"].int64() ?? 0),
                seen < limit ? nil : try row?["last"].int64())
    }
}
