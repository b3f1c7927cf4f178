import Foundation
import Testing

/// What the notification tests need from a harness: a registered subscription, and notifications
/// about it signed the way Apple signs them.
extension APIHarness {
    static let notificationPath = "/v1/notifications/apple"

    /// Registers index 0 (monthly, renewing) and returns its original_transaction_id and ledger id.
    func registered() async throws -> (otid: String, id: Int) {
        let receipt = receipt()
        let reply = try await post("/v1/receipts", ["receipt": receipt.receiptData])
        let subscription = try #require((reply.json["subscriptions"] as? [[String: Any]])?.first?["subscription"] as? [String: Any])
        return (receipt.subscriptions[0].originalTransactionID, try #require(subscription["id"] as? Int))
    }

    /// A V2 notification about `otid`, signed by the test CA the server trusts.
    func signedNotification(otid: String, type: String = "DID_RENEW", uuid: String = UUID().uuidString,
                            environment: String = "Production", bundleID: String = "com.example.app") throws -> [String: Any] {
        let transaction = try ca.sign([
            "originalTransactionId": otid, "transactionId": "\(otid)9", "productId": "pro.monthly", "environment": environment,
            "bundleId": bundleID,
        ])
        let payload = try ca.sign([
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": Self.nowMs,
            "data": ["environment": environment, "bundleId": bundleID, "signedTransactionInfo": transaction],
        ])
        return ["signedPayload": payload]
    }
}
