import Foundation

/// The body Apple's verifyReceipt accepts.
struct VerifyReceiptRequest: Decodable {
    let receiptData: String?
    let password: String?
    let excludeOldTransactions: Bool?

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data", password, excludeOldTransactions = "exclude-old-transactions"
    }
}

/// Apple's verification logic, without faults: which status a request earns and the body that goes with it.
enum VerifyReceiptEndpoint {
    /// - Parameters:
    ///   - body: the request body as sent.
    ///   - endpoint: which service was called (production `/verifyReceipt` or `/sandbox/verifyReceipt`).
    ///   - sharedSecret: the account's primary shared secret, good for every app's receipts; nil
    ///     with no `appSecrets` either: none is required.
    ///   - appSecrets: app-specific shared secrets, by bundle id: each good for its app's receipts too.
    ///   - extensions: the renewal-date extensions the Server API granted, which move expiries.
    static func answer(
        body: [UInt8], endpoint: SimulatedEnvironment, now: Int64, sharedSecret: String?, appSecrets: [String: String] = [:],
        extensions: GrantedExtensions? = nil
    ) -> (status: Int, body: [UInt8]) {
        guard let request = try? JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body)) else {
            return failure(21000)  // the App Store could not read the JSON object
        }
        guard let receiptData = request.receiptData, let receipt = SimulatedReceipt(receiptData: receiptData) else {
            return failure(21002)
        }
        switch (receipt.token.environment, endpoint) {
        case (.sandbox, .production): return failure(21007)
        case (.production, .sandbox): return failure(21008)
        default: break
        }
        let accepted = [sharedSecret, appSecrets[receipt.token.bundleID]].compactMap(\.self)
        if !accepted.isEmpty || !appSecrets.isEmpty, !accepted.contains(request.password ?? "") { return failure(21004) }
        return receipt.extended(by: extensions).answer(at: now, excludeOldTransactions: request.excludeOldTransactions ?? false)
    }

    static func failure(_ status: Int) -> (status: Int, body: [UInt8]) {
        (status, ResponseRenderer.status(status))
    }
}
