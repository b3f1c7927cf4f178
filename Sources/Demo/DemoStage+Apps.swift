import AppStoreSimulator
import AppStore
import Fleet
import FleetConfiguration
import Foundation

/// The demo's two apps on one Apple account: `default`, the simulator's first app, whose receipts
/// go with the account's shared secret, and `journal`, its second, with an app-specific secret (on
/// the Server API, the account's key signs a token for each).
extension DemoStage {
    static let journalSecret = "demo-journal-secret"
    /// A quarter of the receipts are the journal's, drawn from a seed of their own.
    static let journalSeed = fleetSeed + 1

    static var twoApps: AppCatalog {
        try! AppCatalog([
            AppConfiguration(name: AppCatalog.defaultAppName, bundleIDs: [Catalog.bundleIDs[0]]),
            AppConfiguration(name: "journal", bundleIDs: [Catalog.bundleIDs[1]], sharedSecrets: [SharedSecret(journalSecret)]),
        ])
    }

    var hasTwoApps: Bool { settings.apps.apps.count == 2 }

    var appsFile: URL { logDirectory.appendingPathComponent("apps.json") }

    /// Writes the apps file (and the journal's secret) the demo's processes read.
    func writeAppsFile() throws {
        guard hasTwoApps else { return }
        let secret = logDirectory.appendingPathComponent("journal.secret")
        try Data(Self.journalSecret.utf8).write(to: secret)
        let apps: [String: Any] = [
            AppCatalog.defaultAppName: ["bundle_ids": [Catalog.bundleIDs[0]]],
            "journal": ["bundle_ids": [Catalog.bundleIDs[1]], "shared_secret_file": secret.path],
        ]
        try JSONSerialization.data(withJSONObject: apps, options: [.sortedKeys]).write(to: appsFile)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
    }

    /// The simulator learns the journal's app-specific secret, as App Store Connect holds it.
    var simulatorAppSecrets: String {
        #"{"app_shared_secrets": {"\#(Catalog.bundleIDs[1])": "\#(Self.journalSecret)"}}"#
    }

    /// `count` receipts: all the first app's, or with two apps a quarter of them the journal's.
    func drawReceipts(count: Int) -> [SimulatedReceipt] {
        let anchorMs = Int64(anchor.timeIntervalSince1970 * 1000)
        let seeds = [Self.fleetSeed, Self.journalSeed]
        return receiptCounts(count).enumerated().flatMap { app, count in
            SimulatedReceipt.fleet(count: count, seed: seeds[app], anchorMs: anchorMs, app: app)
        }
    }

    /// How many of `count` receipts each app's fleet holds: a quarter the journal's, with two apps.
    func receiptCounts(_ count: Int) -> [Int] {
        hasTwoApps ? [count - count / 4, count / 4] : [count]
    }

    /// The ledger's app of a simulated receipt.
    func app(of receipt: SimulatedReceipt) -> String {
        settings.apps.app(bundleID: receipt.token.bundleID)?.name ?? AppCatalog.defaultAppName
    }
}
