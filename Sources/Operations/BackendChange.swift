import AppStore
import FleetConfiguration
import Ledger
import PostgresClient

/// `receiptfleet subscriptions set-backend`: moves the subscriptions `selection` chooses (and,
/// when `originalTransactionID` is given, those with it) to `target` (nil: the deployment's
/// default), audited unless `dryRun`; `progress` hears the running total after each page.
public func moveSubscriptionsBackend(
    to target: VerificationBackend?, _ selection: BackendSelection, originalTransactionID: String?, described: String,
    dryRun: Bool, settings: FleetSettings, progress: (BackendMove) -> Void
) throws -> [String] {
    if target == .serverAPI || (target == nil && settings.defaultBackend == .serverAPI), settings.serverAPI == nil, !dryRun {
        throw BackendChangeRefused(description: """
            The Server API has no key configured here, and workers without one halt on these subscriptions: set \
            server-api-issuer-id, server-api-key-id, server-api-key-file and apple-bundle-id first \
            (docs/appstore-server-api.md), and check them with `receiptfleet config check`.
            """)
    }
    var selection = selection
    let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
    if let originalTransactionID {
        selection.ids = try ledger.subscriptions(originalTransactionID: originalTransactionID).map(\.id)
        guard selection.ids?.isEmpty == false else { throw NotFound("No subscription has that original_transaction_id.") }
    }
    func move() throws -> BackendMove { try ledger.moveBackend(to: target, selection, dryRun: dryRun, afterEachPage: progress) }
    let moved = try dryRun ? move() : audited(
        "subscriptions.set-backend", target: described, details: ["backend": target.map { "\($0)" } ?? "default"], settings: settings,
        results: { ["moved": "\($0.moved)", "without_receipt": "\($0.withoutReceipt)"] }, move)
    let destination = target.map { "\($0)" } ?? "the default (\(settings.defaultBackend))"
    return ["\(dryRun ? "Would move" : "Moved") \(moved.moved) subscription(s) to \(destination)."] + (moved.withoutReceipt > 0
        ? ["\(moved.withoutReceipt) have no stored receipt and stay on the Server API: verifyReceipt could not ask about them."] : [])
}

/// A move the deployment cannot make: said with what to configure.
public struct BackendChangeRefused: Error, CustomStringConvertible {
    public let description: String
}
