import AppStoreSimulator
import ArgumentParser
import Foundation

/// The JSON lines `simulate-appstore seed` writes: each subscription of a simulated fleet, with
/// its receipt and its ground truth at one moment.
public enum SimulatedFleetFile {
    /// Writes the `count` receipts drawn from `seed` for the app of `bundleID`, their lifecycles
    /// centred on `atMs`, to `path`; returns how many subscriptions it wrote, by status.
    public static func write(count: Int, seed: UInt64, bundleID: String, atMs: Int64, to path: String) throws -> [SubscriptionStatus: Int] {
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw ValidationError("Cannot create \(path): check the directory exists and is writable.")
        }
        defer { try? file.close() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var chunk = Data()
        var statuses: [SubscriptionStatus: Int] = [:]
        let app = Catalog.bundleIDs.firstIndex(of: bundleID) ?? 0
        for receipt in SimulatedReceipt.fleet(count: count, seed: seed, anchorMs: atMs, app: app) {
            for subscription in receipt.subscriptions {
                let truth = subscription.groundTruth(at: atMs)
                chunk.append(try encoder.encode(truth))
                chunk.append(UInt8(ascii: "\n"))
                statuses[truth.status, default: 0] += 1
            }
            if chunk.count > 1 << 20 {
                try file.write(contentsOf: chunk)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try file.write(contentsOf: chunk)
        return statuses
    }
}
