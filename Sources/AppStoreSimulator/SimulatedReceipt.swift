/// A receipt the simulator can verify: its token, its lifecycle kind and the subscriptions on it.
/// Pure: what Apple would answer for it, and the truth about it, depend only on the token and a time
/// (and, for what Apple answers, on the renewal-date extensions it granted: `extended(by:)`).
public struct SimulatedReceipt: Sendable {
    /// What `receipt-data` encodes.
    public let token: ReceiptToken
    /// The story the receipt tells, fixed by its index.
    public let kind: LifecycleKind
    private(set) var scripts: [ChainScript]
    /// The one-time purchase on a `lifetimePurchase` receipt.
    public let lifetimePurchase: SimulatedLifetimePurchase?

    /// The receipt a token stands for.
    public init(token: ReceiptToken) {
        self.token = token
        self.kind = LifecycleKind.at(index: token.index)
        lifetimePurchase = SimulatedLifetimePurchase(token: token, kind: kind)
        self.scripts = lifetimePurchase?.isAlone == true ? [] : ChainScript.scripts(for: token, kind: kind)
    }

    /// nil when `receiptData` is not a simulator receipt.
    public init?(receiptData: String) {
        guard let token = ReceiptToken(receiptData: receiptData) else { return nil }
        self.init(token: token)
    }

    /// Receipts `0..<count` of a seeded fleet of the account's `app`th app, their lifecycles centred on `anchorMs`.
    public static func fleet(count: Int, seed: UInt64, anchorMs: Int64, app: Int = 0) -> [SimulatedReceipt] {
        (0..<count).map { index in
            let environment = LifecycleKind.at(index: index).environment
            return SimulatedReceipt(token: ReceiptToken(seed: seed, index: index, environment: environment, anchorMs: anchorMs, app: app))
        }
    }

    /// The base64 `receipt-data` to send to the simulator.
    public var receiptData: String { token.receiptData }

    /// One per original_transaction_id on the receipt.
    public var subscriptions: [SimulatedSubscription] {
        scripts.map { SimulatedSubscription(receipt: self, script: $0) }
    }

    /// The status Apple gives this receipt whatever the time, if it is not a valid one.
    var fixedFailureStatus: Int? {
        switch kind {
        case .malformed: 21002
        case .deletedAccount: 21010
        default: nil
        }
    }

    var identifiers: IdentifierScheme { IdentifierScheme(seed: token.seed, index: token.index) }

    func timeline(_ script: ChainScript) -> Timeline {
        Timeline(script: script, time: Durations.of(token.environment), ids: identifiers)
    }

    /// What verifyReceipt answers for this receipt at `now` (ms), asked with the right password at
    /// the right endpoint: Apple's status and the body that goes with it.
    public func answer(at now: Int64, excludeOldTransactions: Bool) -> (status: Int, body: [UInt8]) {
        if let fixed = fixedFailureStatus { return VerifyReceiptEndpoint.failure(fixed) }
        let snapshots = snapshots(at: now)
        // A receipt whose first purchase is still in the simulated future cannot have been issued.
        guard !snapshots.isEmpty || lifetimePurchase?.status(at: now) != nil else { return VerifyReceiptEndpoint.failure(21002) }
        return (0, ResponseRenderer.valid(self, snapshots: snapshots, now: now, excludeOldTransactions: excludeOldTransactions))
    }

    /// The receipt as it reads once Apple granted `extensions` (by original transaction id) to its subscriptions.
    func extended(by extensions: GrantedExtensions?) -> SimulatedReceipt {
        guard let extensions else { return self }
        var receipt = self
        for script in scripts {
            let id = String(identifiers.transactionID(chain: script.chain, sequence: 0))
            for grant in extensions.granted(app: token.app, originalTransactionID: id) {
                receipt.extend(chain: script.chain, at: grant.atMs, by: grant.byMs)
            }
        }
        return receipt
    }

    /// What Apple knows of each subscription already bought at `now`.
    func snapshots(at now: Int64) -> [ChainSnapshot] {
        scripts.compactMap { timeline($0).snapshot(at: now) }
    }

    /// What Apple knows at `now` of the subscription of `chain`, once bought.
    func snapshot(chain: Int, at now: Int64) -> ChainSnapshot? {
        scripts.first { $0.chain == chain }.flatMap { timeline($0).snapshot(at: now) }
    }

    /// Moves the end of the period of `chain`'s subscription running `at` by `by` ms.
    mutating func extend(chain: Int, at: Int64, by: Int64) {
        for index in scripts.indices where scripts[index].chain == chain { scripts[index].renewalExtensions.append((at, by)) }
    }
}

/// One subscription (one original_transaction_id) of a simulated receipt.
public struct SimulatedSubscription: Sendable {
    /// The receipt that carries the subscription.
    public let receipt: SimulatedReceipt
    let script: ChainScript

    /// The id Apple gives the subscription in every entry (`original_transaction_id`).
    public var originalTransactionID: String {
        String(receipt.identifiers.transactionID(chain: script.chain, sequence: 0))
    }

    /// What a correct reading of Apple's answers concludes at `milliseconds` (since 1970, like Apple's `_ms` fields).
    public func groundTruth(at milliseconds: Int64) -> GroundTruth {
        var truth = GroundTruth(
            receiptData: receipt.receiptData, bundleID: receipt.token.bundleID, originalTransactionID: originalTransactionID,
            environment: receipt.token.environment, kind: receipt.kind, atMs: milliseconds,
            status: .invalid, productID: script.firstPlan.productID, ownership: script.ownership)
        guard receipt.fixedFailureStatus == nil, let snapshot = receipt.timeline(script).snapshot(at: milliseconds)
        else { return truth }
        truth.status = snapshot.status
        truth.productID = snapshot.renewal.productID
        truth.expiresAtMs = snapshot.expiresMs
        truth.autoRenew = snapshot.renewal.autoRenewOn
        truth.autoRenewProductID = snapshot.renewal.autoRenewProductID
        truth.expirationIntent = snapshot.renewal.expirationIntent
        return truth
    }
}

/// The true state of one subscription at one time: one line of the seed file.
public struct GroundTruth: Sendable, Codable, Equatable {
    /// The receipt to verify (base64 `receipt-data`).
    public var receiptData: String
    /// The app's, which its receipt names.
    public var bundleID: String
    public var originalTransactionID: String
    public var environment: SimulatedEnvironment
    /// The receipt's lifecycle kind.
    public var kind: LifecycleKind
    /// The time this truth holds for (ms since 1970).
    public var atMs: Int64
    public var status: SubscriptionStatus
    /// The product of the entry that decides the state (the one with the latest expiry).
    public var productID: String
    /// That entry's expiry (ms); nil when `invalid`.
    public var expiresAtMs: Int64?
    /// `auto_renew_status` of the pending renewal; nil when `invalid`.
    public var autoRenew: Bool?
    /// The product the next renewal will be (differs from `productID` while a plan change is scheduled).
    public var autoRenewProductID: String?
    /// Why it expired (1 customer, 2 billing) once Apple reports it; nil otherwise.
    public var expirationIntent: Int?
    public var ownership: Ownership

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt_data", bundleID = "bundle_id", originalTransactionID = "original_transaction_id", environment, kind
        case atMs = "at_ms", status, productID = "product_id", expiresAtMs = "expires_at_ms", autoRenew = "auto_renew"
        case autoRenewProductID = "auto_renew_product_id", expirationIntent = "expiration_intent", ownership
    }

    init(receiptData: String, bundleID: String, originalTransactionID: String, environment: SimulatedEnvironment,
         kind: LifecycleKind, atMs: Int64, status: SubscriptionStatus, productID: String, ownership: Ownership) {
        self.receiptData = receiptData
        self.bundleID = bundleID
        self.originalTransactionID = originalTransactionID
        self.environment = environment
        self.kind = kind
        self.atMs = atMs
        self.status = status
        self.productID = productID
        self.ownership = ownership
    }

    /// Writes every field, absent values as null, so each seed line has the same keys.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(receiptData, forKey: .receiptData)
        try container.encode(bundleID, forKey: .bundleID)
        try container.encode(originalTransactionID, forKey: .originalTransactionID)
        try container.encode(environment, forKey: .environment)
        try container.encode(kind, forKey: .kind)
        try container.encode(atMs, forKey: .atMs)
        try container.encode(status, forKey: .status)
        try container.encode(productID, forKey: .productID)
        try container.encode(expiresAtMs, forKey: .expiresAtMs)
        try container.encode(autoRenew, forKey: .autoRenew)
        try container.encode(autoRenewProductID, forKey: .autoRenewProductID)
        try container.encode(expirationIntent, forKey: .expirationIntent)
        try container.encode(ownership, forKey: .ownership)
    }
}
