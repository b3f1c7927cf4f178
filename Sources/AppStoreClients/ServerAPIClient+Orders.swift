import AppStore
import Foundation

extension ServerAPIClient {
    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): the transactions of the order a
    /// customer quotes from Apple's receipt email, each verified (the chain to the trusted root,
    /// the signature, the app's bundle id) and read as a receipt lists its transactions; nil when
    /// Apple knows no such order for the app (`status` 1, a 200). Always asks production: Apple
    /// has no sandbox for it, so a sandbox purchase's order is never found.
    public func lookUpOrder(_ orderID: String) throws(ServerAPICallError) -> [ReceiptTransaction]? {
        // Apple judges the id (a malformed one is its 400): the client only keeps it one path segment.
        let answer = try call("/inApps/v1/lookup/" + Self.pathSegment(orderID), .get, in: .production)
        let order: OrderLookupResponse
        do {
            order = try OrderLookupResponse(body: answer.body, httpStatus: answer.status)
        } catch {
            throw ServerAPICallError(description: "Apple's answer to the order lookup could not be read: \(error)", retryAfter: nil)
        }
        if order.status == OrderLookupResponse.invalid { return nil }
        guard order.status == OrderLookupResponse.valid else {
            throw ServerAPICallError(
                description: "Apple's answer to the order lookup has status \(order.status.map { String($0) } ?? "none"), not 0 or 1",
                retryAfter: nil)
        }
        do {
            let now = self.now()
            let payloads = try order.signedTransactions.map { try verified($0, at: now) }
            return try VerifyReceiptResponse(
                signedTransactions: payloads, renewals: [], environment: .production, bundleID: tokens.key.bundleID,
                showsEveryRefund: false
            ).latestReceiptInfo
        } catch {
            throw ServerAPICallError(description: "a signed transaction of the order cannot be believed: \(error)", retryAfter: nil)
        }
    }
}
