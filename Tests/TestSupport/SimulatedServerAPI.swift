import FleetConfiguration
import Foundation
import AppStore
import AppStoreClients
import AppStoreSimulator
import Crypto
import Fleet

/// The App Store Server API as the simulator serves it to tests: a key of the tests' own, which
/// the simulator is told to accept, and the simulator's signing root, which the fleet is told to trust.
public enum SimulatedServerAPI {
    public static let privateKey = P256.Signing.PrivateKey()

    /// What the simulator needs to serve the Server API for the fleet drawn with `seed` around
    /// `anchorMs` (and for the second app's, drawn with `journalSeed`).
    /// `subscriptions`: how many receipts the fleet holds, for its notification history.
    public static func simulation(seed: UInt64, journalSeed: UInt64? = nil, anchorMs: Int64, subscriptions: Int = 0) -> ServerAPISimulation {
        ServerAPISimulation(
            publicKey: privateKey.publicKey, seeds: [seed] + (journalSeed.map { [$0] } ?? []), anchorMs: anchorMs, subscriptions: [subscriptions])
    }

    /// The key and the simulator's root written to files in `directory`, and the settings that
    /// name them (with the simulator's URLs), as an operator configures a `receiptfleet` process.
    public static func environment(for simulator: LiveSimulator, filesIn directory: URL) throws -> [String: String] {
        let (keyFile, rootFile) = (directory.appendingPathComponent("AuthKey_SIMKEY.p8"), directory.appendingPathComponent("root.pem"))
        try privateKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        try SimulatorSigningChain().rootPEM.write(to: rootFile, atomically: true, encoding: .utf8)
        return [
            "RECEIPTFLEET_SERVER_API_ISSUER_ID": "simulated-issuer", "RECEIPTFLEET_SERVER_API_KEY_ID": "SIMKEY",
            "RECEIPTFLEET_SERVER_API_KEY_FILE": keyFile.path, "RECEIPTFLEET_APPLE_BUNDLE_ID": ServerAPISimulation.bundleID,
            "RECEIPTFLEET_APPLE_ROOT_CERTIFICATE": rootFile.path,
            "RECEIPTFLEET_SERVER_API_PRODUCTION_URL": simulator.serverAPIProductionURL,
            "RECEIPTFLEET_SERVER_API_SANDBOX_URL": simulator.serverAPISandboxURL,
        ]
    }

    /// The fleet's settings for `simulator`'s Server API.
    public static func settings(_ simulator: LiveSimulator) throws -> ServerAPISettings {
        ServerAPISettings(
            key: try ServerAPIKey(issuerID: "simulated-issuer", keyID: "SIMKEY", bundleID: ServerAPISimulation.bundleID, pem: privateKey.pemRepresentation),
            endpoints: ServerAPIEndpoints(production: simulator.serverAPIProductionURL, sandbox: simulator.serverAPISandboxURL),
            signatures: SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root]))
    }
}
