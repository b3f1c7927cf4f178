/// Which of Apple's services the fleet asks about a subscription. verifyReceipt needs the receipt
/// the app sent; the App Store Server API needs only the original transaction id, so a StoreKit 2
/// app's subscriptions (which have no receipt) can only use it.
public enum VerificationBackend: String, Sendable, Encodable, CaseIterable, CustomStringConvertible {
    case verifyReceipt = "verify_receipt"
    case serverAPI = "server_api"

    /// As operators type it: `verify-receipt`, `server-api` (the stored names are accepted too).
    public init?(argument: String) {
        self.init(rawValue: argument.replacingOccurrences(of: "-", with: "_").lowercased())
    }

    public var description: String { rawValue.replacingOccurrences(of: "_", with: "-") }
}

/// One of Apple's endpoints. Apple limits each on its own, so each has a rate-limit budget of its own.
public enum AppleEndpoint: String, Sendable, CaseIterable {
    case verifyReceipt = "verify_receipt"
    /// Get All Subscription Statuses.
    case subscriptionStatuses = "subscription_statuses"
    /// Get Transaction History.
    case transactionHistory = "transaction_history"
    /// Send Consumption Information (the answer to a refund request).
    case consumptionInformation = "consumption_information"
    /// Extend a Subscription Renewal Date (one subscription).
    case extendRenewalDate = "extend_renewal_date"
    /// Extend Subscription Renewal Dates for All Active Subscribers (one product).
    case extendRenewalDates = "extend_renewal_dates"
    /// Get Status of Subscription Renewal Date Extensions (a mass extension's progress).
    case renewalExtensionStatus = "renewal_extension_status"
    /// Get Notification History.
    case notificationHistory = "notification_history"
    /// Request a Test Notification.
    case testNotification = "test_notification"
    /// Get Test Notification Status.
    case testNotificationStatus = "test_notification_status"
    /// Look Up Order ID.
    case orderLookup = "order_lookup"

    public var backend: VerificationBackend { self == .verifyReceipt ? .verifyReceipt : .serverAPI }
}

/// What Apple is asked about: a receipt (verifyReceipt), or a subscription's original
/// transaction (the Server API) with the latest transaction the fleet already knows, so a quiet
/// subscription costs one call, and when its refunded transactions are read too (a second call).
/// `onlyIn` names the one environment a re-check of a transaction Apple knew in neither asks
/// (`AppStoreEnvironment.recheck(ofUnknown:filedIn:on:)`); nil asks the other environment too
/// when Apple does not know the transaction in the first.
public enum VerificationSubject: Sendable {
    case receipt(ReceiptData)
    case transaction(originalTransactionID: String, knownLatestTransactionID: String?, refunds: RefundCheck, onlyIn: AppStoreEnvironment?)

    public var backend: VerificationBackend {
        switch self {
        case .receipt: .verifyReceipt
        case .transaction: .serverAPI
        }
    }

    /// The endpoint the first call goes to.
    public var firstEndpoint: AppleEndpoint { backend == .verifyReceipt ? .verifyReceipt : .subscriptionStatuses }
}
