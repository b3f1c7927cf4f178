/// The order ids of the simulated purchases: each transaction (a first purchase, each renewal, a
/// lifetime purchase) is billed as an order of its own, as Apple emails a receipt for each, and its
/// order id is its transaction id written as Apple writes order ids (`M` and nine letters or
/// digits), so the simulator finds an order's transaction without storing anything.
public enum SimulatedOrder {
    private static let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    /// The simulator's transaction ids are this plus a 46-bit number (`IdentifierScheme`), which
    /// nine base-36 digits hold.
    private static let firstTransactionID: UInt64 = 100_000_000_000_000
    private static let length = 9

    /// The order id of the simulator's transaction `transactionID`; nil for an id the simulator never makes.
    public static func orderID(ofTransactionID transactionID: UInt64) -> String? {
        guard transactionID >= firstTransactionID, transactionID - firstTransactionID < 1 << 46 else { return nil }
        var value = transactionID - firstTransactionID
        var text = [Character](repeating: "0", count: length)
        for position in text.indices.reversed() {
            text[position] = digits[Int(value % 36)]
            value /= 36
        }
        return "M" + String(text)
    }

    /// The transaction id an order id of `orderID(ofTransactionID:)` stands for.
    static func transactionID(ofOrderID orderID: String) -> UInt64? {
        let text = Array(orderID)
        guard text.count == length + 1, text[0] == "M" else { return nil }
        var value: UInt64 = 0
        for character in text.dropFirst() {
            guard let digit = digits.firstIndex(of: character) else { return nil }
            value = value * 36 + UInt64(digit)
        }
        return value < 1 << 46 ? firstTransactionID + value : nil
    }
}

/// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`) as Apple answers it: production only (the
/// sandbox host has no such endpoint: 404); an order id that is not letters and digits is a bad
/// request (400, `GeneralBadRequestError` 4000000); an order the app does not have is a 200 with
/// `status` 1 and no transactions; the app's order is `status` 0 with its signed transactions.
enum OrderLookupEndpoint {
    static func lookUp(
        app: Int, orderID: String, endpoint: SimulatedEnvironment, now: Int64, setup: ServerAPISimulation, signing: SimulatorSigningChain
    ) -> ServerAPIEndpoint.Answer {
        guard endpoint == .production else { return ServerAPIEndpoint.Answer(httpStatus: 404, body: []) }
        guard !orderID.isEmpty, orderID.count <= 64, orderID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            return ServerAPIEndpoint.error(400, 4_000_000, "Invalid request.")
        }
        var json = JSONWriter(capacity: 2048)
        json.beginObject()
        if let payload = transaction(ofOrder: orderID, app: app, now: now, setup: setup) {
            json.number("status", 0)
            json.beginArray("signedTransactions")
            json.element(signing.sign(payload))
            json.endArray()
        } else {
            json.number("status", 1)
        }
        json.endObject()
        return ServerAPIEndpoint.Answer(httpStatus: 200, body: json.finish())
    }

    /// The `JWSTransactionDecodedPayload` of the order's transaction, when `app`'s production
    /// fleet has it by `now`.
    private static func transaction(ofOrder orderID: String, app: Int, now: Int64, setup: ServerAPISimulation) -> [UInt8]? {
        guard let id = SimulatedOrder.transactionID(ofOrderID: orderID),
              let position = IdentifierScheme.position(ofTransactionID: id, seed: setup.seeds[app])
        else { return nil }
        let receipt = SimulatedReceipt(token: ReceiptToken(
            seed: setup.seeds[app], index: position.index, environment: LifecycleKind.at(index: position.index).environment,
            anchorMs: setup.anchorMs, app: app))
        guard receipt.token.environment == .production, receipt.fixedFailureStatus == nil else { return nil }
        let bundleID = receipt.token.bundleID
        if let lifetime = receipt.lifetimePurchase, lifetime.transactionID == String(id), lifetime.status(at: now) != nil {
            return lifetime.transactionPayload(of: bundleID, at: now)
        }
        guard let snapshot = receipt.extended(by: setup.extensions).snapshot(chain: position.chain, at: now),
              let sequence = snapshot.transactions.firstIndex(where: { $0.transactionID == id })
        else { return nil }
        return ServerAPIEndpoint.transactionPayload(
            snapshot.transactions[sequence], of: bundleID, renewalCount: sequence, environment: .production, now: now)
    }
}

extension SimulatedLifetimePurchase {
    /// `JWSTransactionDecodedPayload` of the non-consumable: no expiry, no renewal fields.
    func transactionPayload(of bundleID: String, at now: Int64) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.string("transactionId", transactionID)
        json.string("originalTransactionId", transactionID)
        json.string("bundleId", bundleID)
        json.string("productId", Self.productID)
        json.number("purchaseDate", purchaseMs)
        json.number("originalPurchaseDate", purchaseMs)
        json.number("quantity", 1)
        json.string("type", "Non-Consumable")
        json.string("inAppOwnershipType", Ownership.purchased.rawValue)
        json.number("signedDate", now)
        json.string("environment", SimulatedEnvironment.production.rawValue)
        json.string("transactionReason", "PURCHASE")
        if let refund, refund.atMs <= now {
            json.number("revocationDate", refund.atMs)
            json.number("revocationReason", Int64(refund.reason))
        }
        json.endObject()
        return json.finish()
    }
}
