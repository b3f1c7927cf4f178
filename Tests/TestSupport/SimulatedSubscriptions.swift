import AppStore
import AppStoreSimulator
import Ledger

extension SimulatedSubscription {
    /// What the ledger stores for this subscription: its receipt and environment.
    public var newSubscription: NewSubscription {
        NewSubscription(
            originalTransactionID: originalTransactionID,
            environment: receipt.token.environment == .sandbox ? .sandbox : .production,
            receipt: ReceiptData(base64: receipt.receiptData))
    }
}
