import AppStore
import AppStoreClients
import AppStoreSimulator
import Fleet
import FleetConfiguration
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
    var serverAPIEnvironment: SettingValues {
        guard let serverAPI = settings.serverAPI else { return [:] }
        return [
            Settings.backend: "\(settings.defaultBackend)",
            Settings.serverAPIIssuerID: serverAPI.key.issuerID,
            Settings.serverAPIKeyID: serverAPI.key.keyID,
            Settings.serverAPIKeyFile: serverAPIFiles.key.path,
            Settings.appleBundleID: serverAPI.key.bundleID,
            Settings.appleRootCertificate: serverAPIFiles.root.path,
            Settings.serverAPIProductionURL: serverAPI.endpoints.production,
            Settings.serverAPISandboxURL: serverAPI.endpoints.sandbox,
        ]
    }
}
