import AppStore
import AppStoreClients
import AppStoreSimulator
import Crypto
import Foundation
import HTTPClient
import TestSupport

/// A Server API client against a live simulator serving the fleet of seed 11 (60 receipts),
/// its clock stopped at `nowMs`: the client's tokens signed by the key the simulator trusts, or
/// with `unknownKey` by one it does not.
func withSimulatedServerAPIClient<T: Sendable>(
    anchorMs: Int64, nowMs: Int64, knobs: FaultKnobs = FaultKnobs(), unknownKey: Bool = false,
    _ body: @escaping @Sendable (ServerAPIClient) throws -> T
) async throws -> T {
    let key = P256.Signing.PrivateKey()
    let setup = ServerAPISimulation(publicKey: key.publicKey, seeds: [11], anchorMs: anchorMs, subscriptions: [60])
    return try await LiveSimulator.with(knobs: knobs, startMs: nowMs, serverAPI: setup) { simulator in
        simulator.store.clock.set(nowMs: nowMs, stopped: true)
        let endpoints = ServerAPIEndpoints(production: simulator.serverAPIProductionURL, sandbox: simulator.serverAPISandboxURL)
        let signer = unknownKey ? P256.Signing.PrivateKey() : key
        let apiKey = try ServerAPIKey(issuerID: "issuer", keyID: "SIMKEY", bundleID: "com.receiptfleet.demo", pem: signer.pemRepresentation)
        let verifier = SignedPayloadVerifier(trustedRoots: [try SimulatorSigningChain().root])
        return try await onOwnThread {
            try body(ServerAPIClient(endpoints: endpoints, tokens: try ServerAPITokens(key: apiKey), signatures: verifier,
                                     http: HTTPClientConfiguration(), now: { Date() }))
        }
    }
}
