import AppStore
import AppStoreClients
import AppStoreSimulator
import Fleet
import Foundation

/// `demo --backend server-api`: a key of the demo's own for the simulated App Store Server API,
/// and the simulator's signing root, trusted by this demo's fleet only.
extension DemoStage {
    /// Writes a key (readable by this user only; one an earlier demo wrote is kept) and the
    /// simulator's root into `files`, and the settings that reach the simulator's Server API with them.
    static func serverAPISettings(files: (key: URL, root: URL), simulatorBase: String) throws -> ServerAPISettings {
        _ = try SimulatedServerAPIFiles.writeKey(to: files.key.path)
        try SimulatedServerAPIFiles.writeRoot(to: files.root.path)
        return ServerAPISettings(
            key: try ServerAPIKey(issuerID: "demo-issuer", keyID: "DEMOKEY", bundleID: ServerAPISimulation.bundleID, file: files.key.path),
            endpoints: ServerAPIEndpoints(production: simulatorBase, sandbox: simulatorBase + "/sandbox"),
            signatures: SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root]))
    }

    /// The Server API's settings as the child processes read them; none for verifyReceipt.
    var serverAPIEnvironment: [String: String] {
        guard let serverAPI = settings.serverAPI else { return [:] }
        return [
            "RECEIPTFLEET_BACKEND": "\(settings.defaultBackend)",
            "RECEIPTFLEET_SERVER_API_ISSUER_ID": serverAPI.key.issuerID,
            "RECEIPTFLEET_SERVER_API_KEY_ID": serverAPI.key.keyID,
            "RECEIPTFLEET_SERVER_API_KEY_FILE": serverAPIFiles.key.path,
            "RECEIPTFLEET_APPLE_BUNDLE_ID": serverAPI.key.bundleID,
            "RECEIPTFLEET_APPLE_ROOT_CERTIFICATE": serverAPIFiles.root.path,
            "RECEIPTFLEET_SERVER_API_PRODUCTION_URL": serverAPI.endpoints.production,
            "RECEIPTFLEET_SERVER_API_SANDBOX_URL": serverAPI.endpoints.sandbox,
        ]
    }
}
