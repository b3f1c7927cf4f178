import AppStoreSimulator
import ArgumentParser
import Crypto
import Foundation

/// The files a fleet needs to talk to the simulated Server API: `seed`'s, and the demo's.
public enum SimulatedServerAPIFiles {
    /// Writes a new In-App Purchase key (P-256, PEM, readable by this user only) unless one is
    /// there; returns whether it wrote one.
    public static func writeKey(to path: String) throws -> Bool {
        guard !FileManager.default.fileExists(atPath: path) else { return false }
        let pem = P256.Signing.PrivateKey().pemRepresentation + "\n"
        guard FileManager.default.createFile(atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("Cannot create \(path): check the directory exists and is writable.")
        }
        return true
    }

    /// The In-App Purchase key `writeKey` wrote, whose tokens the simulated Server API accepts.
    public static func readKey(from path: String) throws -> P256.Signing.PrivateKey {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8), let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw ValidationError("Cannot read a P-256 key from \(path): write one with `simulate-appstore seed --server-api-key`.")
        }
        return key
    }

    /// Writes the root the simulator signs its answers with (PEM).
    public static func writeRoot(to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data((try SimulatorSigningChain().rootPEM + "\n").utf8)) else {
            throw ValidationError("Cannot create \(path): check the directory exists and is writable.")
        }
    }
}
