import AppStore
import AppStoreSimulator
import Fleet
import FleetConfiguration
import Ledger
import TestSupport

/// A deployment of two apps: `default`, the simulator's first app (the setup's own receipts), and
/// `journal`, its second, with receipts drawn from a seed of their own.
extension FleetSetup {
    static let journalSeed = seed + 1

    /// The two apps; the journal verifies its receipts with `journalSecrets` when given.
    static func twoApps(journalSecrets: [SharedSecret] = []) throws -> AppCatalog {
        try AppCatalog([
            AppConfiguration(name: "default", bundleIDs: [Catalog.bundleIDs[0]]),
            AppConfiguration(name: "journal", bundleIDs: [Catalog.bundleIDs[1]], sharedSecrets: journalSecrets),
        ])
    }

    /// Migrates, then adds the subscriptions of `count` of the journal's receipts to the ledger, as the journal's.
    func addJournal(receipts count: Int, nowMs: Int64) async throws -> [SimulatedSubscription] {
        let journal = SimulatedReceipt.fleet(count: count, seed: Self.journalSeed, anchorMs: nowMs, app: 1).flatMap(\.subscriptions)
        try await onOwnThread { [database] in
            let connection = try database.connect()
            try Migrator.migrate(connection)
            try Ledger(connection).addSubscriptions(journal.map {
                var subscription = $0.newSubscription
                subscription.app = "journal"
                return subscription
            })
        }
        return journal
    }

    /// Those of the journal's `subscriptions` whose stored state is not the truth of when Apple
    /// answered (or that were never verified).
    func journalMismatches(_ subscriptions: [SimulatedSubscription]) async throws -> [String] {
        let stored = Dictionary(uniqueKeysWithValues: try await query(
            "SELECT original_transaction_id AS id, status, last_verified_at FROM subscriptions WHERE app = 'journal'"
        ) { (try $0["id"].text() ?? "", (try $0["status"].text() ?? "", try $0["last_verified_at"].timestamptz())) })
        return subscriptions.compactMap { subscription in
            let id = subscription.originalTransactionID
            guard let (status, at) = stored[id], at != nil else { return "\(id): never verified" }
            let truth = subscription.groundTruth(at: Self.milliseconds(at)).status.rawValue
            return truth == status ? nil : "\(subscription.receipt.kind) \(id): \(status) ≠ \(truth)"
        }
    }
}
