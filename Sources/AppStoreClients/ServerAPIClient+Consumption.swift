import AppStore

extension ServerAPIClient {
    /// Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`):
    /// answers the CONSUMPTION_REQUEST notification about `transactionID`. Apple answers 202 and no
    /// body; a refusal throws with Apple's code, a 429 with its Retry-After.
    public func sendConsumptionInformation(
        transactionID: String, _ answer: ConsumptionAnswer, in environment: AppStoreEnvironment
    ) throws(ServerAPICallError) {
        _ = try call("/inApps/v2/transactions/consumption/" + Self.pathSegment(transactionID), .put(answer.body), in: environment)
    }
}
