import Foundation

/// Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`), as
/// Apple documents it: 202 and no body for an answer it takes, which the simulator keeps
/// (`ServerAPISimulation.consumption`); 400 with Apple's error for a transaction id it refuses, a
/// Family Sharing transaction or an invalid body; 404 for a transaction it does not know.
enum ConsumptionEndpoint {
    static func answer(
        app: Int, transactionID: String, body: [UInt8], endpoint: SimulatedEnvironment, now: Int64, setup: ServerAPISimulation
    ) -> ServerAPIEndpoint.Answer {
        guard let id = UInt64(transactionID) else { return ServerAPIEndpoint.error(400, 4_000_006, "Invalid transaction id.") }
        guard let position = IdentifierScheme.position(ofTransactionID: id, seed: setup.seeds[app]) else { return ServerAPIEndpoint.notFound }
        let receipt = SimulatedReceipt(token: ReceiptToken(
            seed: setup.seeds[app], index: position.index, environment: LifecycleKind.at(index: position.index).environment,
            anchorMs: setup.anchorMs, app: app))
        // Only the environment the purchase was made in knows the transaction, once it was made.
        guard receipt.token.environment == endpoint, receipt.fixedFailureStatus == nil,
              let script = receipt.scripts.first(where: { $0.chain == position.chain }),
              let snapshot = receipt.snapshot(chain: position.chain, at: now), position.sequence < snapshot.transactions.count
        else { return ServerAPIEndpoint.notFound }
        guard script.ownership != .familyShared else {
            return ServerAPIEndpoint.error(400, 4_000_185, "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
        }
        let fields: [String: Any]
        switch read(body) {
        case .failure(let refusal): return refusal.answer
        case .success(let read): fields = read
        }
        setup.consumption.record(.init(
            app: receipt.token.bundleID, transactionID: transactionID, environment: endpoint.rawValue,
            deliveryStatus: fields["deliveryStatus"] as? String ?? "", sampleContentProvided: fields["sampleContentProvided"] as? Bool ?? false,
            refundPreference: fields["refundPreference"] as? String, consumptionPercentage: fields["consumptionPercentage"] as? Int,
            atMs: now))
        return ServerAPIEndpoint.Answer(httpStatus: 202, body: [])
    }

    /// The body's fields, checked as Apple checks an auto-renewable subscription's (the only kind
    /// the simulated fleet sells through the Server API): consent, a known delivery status, the
    /// sample flag, a known preference, and no percentage (Apple computes it).
    private static func read(_ body: [UInt8]) -> Result<[String: Any], ServerAPIEndpoint.AnswerError> {
        func refuse(_ code: Int64, _ message: String) -> Result<[String: Any], ServerAPIEndpoint.AnswerError> {
            .failure(.init(ServerAPIEndpoint.error(400, code, message)))
        }
        guard let fields = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .failure(.init(ServerAPIEndpoint.Answer(httpStatus: 400, body: [])))  // malformed: no error code
        }
        guard fields["customerConsented"] as? Bool == true, isBoolean(fields["customerConsented"]) else {
            return refuse(4_000_035, "Invalid request. The customer consented field is required and must indicate the customer consented.")
        }
        guard let status = fields["deliveryStatus"] as? String, validDeliveryStatuses.contains(status) else {
            return refuse(4_000_036, "Invalid request. The delivery status field is invalid.")
        }
        guard isBoolean(fields["sampleContentProvided"]) else {
            return refuse(4_000_041, "Invalid request. The sample content provided field is invalid.")
        }
        if let preference = fields["refundPreference"], !((preference as? String).map(validRefundPreferences.contains) ?? false) {
            return refuse(4_000_044, "Invalid request. The refund preference field is invalid.")
        }
        if fields["consumptionPercentage"] != nil {
            return refuse(4_000_209, "Invalid request. The consumption percentage field is not supported for auto-renewable subscription transactions.")
        }
        return .success(fields)
    }

    static let validDeliveryStatuses: Set = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    static let validRefundPreferences: Set = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    /// JSONSerialization reads `true` and `1` alike as `Bool`: a JSON boolean is the number of C type `char`.
    private static func isBoolean(_ value: Any?) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }
}
