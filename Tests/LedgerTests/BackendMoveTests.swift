import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// Moving subscriptions between verifyReceipt and the Server API (`Ledger.moveBackend`): what a
/// selection picks, the pages, what stays (no receipt, no verifyReceipt), and what never changes.
@Suite struct BackendMoveTests {
    /// A move in pages of 3, as `subscriptions set-backend` runs it in pages of 5,000.
    static func moveAll(
        _ ledger: Ledger, to backend: VerificationBackend?, _ selection: BackendSelection = BackendSelection(), dryRun: Bool = false
    ) throws -> BackendMove {
        try ledger.moveBackend(to: backend, selection, pageSize: 3, dryRun: dryRun)
    }

    @Test func aMoveChangesTheBackendOnlyOfTheSelectionPageByPage() async throws {
        try await withLedger { ledger, _ in
            let seeded = try ledger.seed((1...7).map { String(9100 + $0) })
            let sandbox = seeded[6]
            _ = try ledger.connection.query("UPDATE subscriptions SET environment = 'Sandbox' WHERE id = $1", [.int64(sandbox.id)])
            let verified = try ledger.seedVerified("9200")

            #expect(try Self.moveAll(ledger, to: .serverAPI, dryRun: true).moved == 8)
            #expect(try ledger.loadForVerification(ids: seeded.map(\.id)).allSatisfy { $0.backend == nil }, "a dry run moves nothing")

            let production = try Self.moveAll(ledger, to: .serverAPI, BackendSelection(environment: .production))
            #expect(production.moved == 7 && production.pages == 3)
            #expect(try ledger.reload(sandbox).backend == nil)
            #expect(try ledger.reload(seeded[0]).backend == .serverAPI)
            // Nothing but the backend: the state, its version and the schedule stay for the next check.
            let after = try ledger.reload(verified)
            #expect(after.backend == .serverAPI && after.version == verified.version && after.state == verified.state)
            #expect(after.nextCheckAt == verified.nextCheckAt)

            // Again: nothing left to move. By id, and from one backend only.
            #expect(try Self.moveAll(ledger, to: .serverAPI, BackendSelection(environment: .production)).moved == 0)
            #expect(try Self.moveAll(ledger, to: .verifyReceipt, BackendSelection(ids: [seeded[0].id, seeded[1].id])).moved == 2)
            #expect(try Self.moveAll(ledger, to: nil, BackendSelection(currentBackend: .some(.serverAPI))).moved == 5)
            #expect(try ledger.loadForVerification(ids: seeded.map(\.id)).map(\.backend)
                == [.verifyReceipt, .verifyReceipt, nil, nil, nil, nil, nil])
            #expect(try Self.moveAll(ledger, to: .serverAPI, BackendSelection(app: "another app")).moved == 0)
        }
    }

    /// verifyReceipt needs the receipt: a subscription without one (a StoreKit 2 app's) stays on
    /// the Server API, and is counted.
    @Test func aSubscriptionWithoutAReceiptStaysOnTheServerAPI() async throws {
        try await withLedger { ledger, _ in
            let seeded = try ledger.seed(["9301", "9302"])
            #expect(try Self.moveAll(ledger, to: .serverAPI).moved == 2)
            _ = try ledger.connection.query("DELETE FROM receipts WHERE subscription_id = $1", [.int64(seeded[0].id)])
            let back = try Self.moveAll(ledger, to: .verifyReceipt)
            #expect(back.moved == 1 && back.withoutReceipt == 1)
            #expect(try ledger.reload(seeded[0]).backend == .serverAPI)
            #expect(try Self.moveAll(ledger, to: nil).withoutReceipt == 1, "the default may be verifyReceipt")
        }
    }
}
