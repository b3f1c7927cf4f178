import Foundation

/// What a simulated receipt's `receipt-data` carries: base64 of
/// `rfsim1[.<app>]:<seed>:<index>:<Environment>:<anchor seconds>[:<created seconds>]`.
///
/// The anchor is the time the seeded lifecycle is centred on (the seed command's `--at`); the
/// optional creation time marks a `latest_receipt` issued later than the original receipt. Everything
/// else about the receipt follows from these numbers, so the simulator stores nothing.
public struct ReceiptToken: Sendable, Hashable {
    /// The seed the fleet was drawn from.
    public let seed: UInt64
    /// The receipt's position in its fleet; decides its lifecycle kind.
    public let index: Int
    /// Where the receipt was issued: which verifyReceipt endpoint accepts it.
    public let environment: SimulatedEnvironment
    /// Milliseconds since 1970, a whole second.
    public let anchorMs: Int64
    /// When this copy of the receipt was created (ms), if it is a later `latest_receipt`.
    public let createdMs: Int64?
    /// Which of the account's apps issued it: an index into `Catalog.bundleIDs`.
    public let app: Int

    /// Times are truncated to whole seconds, as the token stores them.
    public init(
        seed: UInt64, index: Int, environment: SimulatedEnvironment, anchorMs: Int64, createdMs: Int64? = nil, app: Int = 0
    ) {
        self.app = app
        self.seed = seed
        self.index = index
        self.environment = environment
        self.anchorMs = anchorMs / 1000 * 1000
        self.createdMs = createdMs.map { $0 / 1000 * 1000 }
    }

    /// Reads `receipt-data`; nil when it is not a simulator receipt (Apple would answer 21002).
    public init?(receiptData: String) {
        guard let data = Data(base64Encoded: receiptData) else { return nil }
        let fields = String(decoding: data, as: UTF8.self).split(separator: ":", omittingEmptySubsequences: false)
        let app = fields.first == "rfsim1" ? 0 : fields.first.flatMap { Int($0.dropFirst("rfsim1.".count)) }
        guard fields.count == 5 || fields.count == 6, fields[0].hasPrefix("rfsim1"), let app, Catalog.bundleIDs.indices.contains(app),
            let seed = UInt64(fields[1]), let index = Int(fields[2]), index >= 0,
            let environment = SimulatedEnvironment(rawValue: String(fields[3])),
            let anchor = Int64(fields[4])
        else { return nil }
        var created: Int64?
        if fields.count == 6 {
            guard let value = Int64(fields[5]) else { return nil }
            created = value * 1000
        }
        self.init(seed: seed, index: index, environment: environment, anchorMs: anchor * 1000, createdMs: created, app: app)
    }

    /// The bundle id of the app that issued it.
    public var bundleID: String { Catalog.bundleIDs[app] }

    /// The base64 string to send as `receipt-data`.
    public var receiptData: String {
        var text = (app == 0 ? "rfsim1" : "rfsim1.\(app)") + ":\(seed):\(index):\(environment.rawValue):\(anchorMs / 1000)"
        if let createdMs { text += ":\(createdMs / 1000)" }
        return Data(text.utf8).base64EncodedString()
    }

    /// The same receipt, re-issued at `createdMs` (what Apple returns as `latest_receipt`).
    func reissued(atMs createdMs: Int64) -> ReceiptToken {
        ReceiptToken(seed: seed, index: index, environment: environment, anchorMs: anchorMs, createdMs: createdMs, app: app)
    }
}
