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
    public static func simulation(seed: UInt64, journalSeed: UInt64? = nil, anchorMs: Int64) -> ServerAPISimulation {
        ServerAPISimulation(publicKey: privateKey.publicKey, seeds: [seed] + (journalSeed.map { [$0] } ?? []), anchorMs: anchorMs)
    }

    /// The fleet's settings for `simulator`'s Server API.
    public static func settings(_ simulator: LiveSimulator) throws -> ServerAPISettings {
        ServerAPISettings(
            key: try ServerAPIKey(issuerID: "simulated-issuer", keyID: "SIMKEY", bundleID: ServerAPISimulation.bundleID, pem: privateKey.pemRepresentation),
            endpoints: ServerAPIEndpoints(production: simulator.serverAPIProductionURL, sandbox: simulator.serverAPISandboxURL),
            signatures: SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root]))
    }
}
