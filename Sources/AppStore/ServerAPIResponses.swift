import Foundation

/// Apple's answer to Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`,
/// a `StatusResponse`): for each subscription group, the latest transaction of each subscription
/// with its status and renewal info, both signed. Nothing here is believed until its JWS verifies
/// (`SignedPayloadVerifier`) and names the app (`VerifyReceiptResponse(signedTransactions:…)`).
public struct SubscriptionStatusesResponse: Sendable {
    /// One subscription's entry in `lastTransactions`.
    public struct LastTransaction: Sendable {
        /// 1 active, 2 expired, 3 in billing retry, 4 in the billing grace period, 5 revoked.
        public let status: Int?
        public let originalTransactionID: String?
        /// A JWS of the latest transaction (`JWSTransactionDecodedPayload`).
        public let signedTransactionInfo: String
        /// A JWS of the renewal plans (`JWSRenewalInfoDecodedPayload`).
        public let signedRenewalInfo: String?
    }

    public let environment: AppStoreEnvironment?
    public let bundleID: String?
    /// Every group's entries, in Apple's order; an entry without a signed transaction is left out.
    public let lastTransactions: [LastTransaction]

    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        self.init(fields: try JSONValue.object(body, httpStatus: httpStatus))
    }

    /// The answer's fields, already parsed (a saved answer inside another document: `ServerAPICapture`).
    public init(fields: [String: JSONValue]) {
        environment = fields.text("environment").flatMap(AppStoreEnvironment.init(wireName:))
        bundleID = fields.text("bundleId")
        lastTransactions = (fields["data"]?.objects ?? []).flatMap { group in
            (group["lastTransactions"]?.objects ?? []).compactMap { entry in
                guard case .string(let transaction)? = entry["signedTransactionInfo"] else { return nil }
                let renewal: String? = if case .string(let jws)? = entry["signedRenewalInfo"] { jws } else { nil }
                return LastTransaction(
                    status: entry.int("status"), originalTransactionID: entry.text("originalTransactionId"),
                    signedTransactionInfo: transaction, signedRenewalInfo: renewal)
            }
        }
    }
}

/// One page of Get Transaction History (`GET /inApps/v2/history/{transactionId}`, a
/// `HistoryResponse`): signed transactions, oldest first, and where the next page starts.
public struct TransactionHistoryPage: Sendable {
    public let signedTransactions: [String]
    /// The token to ask the next page with (`?revision=`), when `hasMore`.
    public let revision: String?
    public let hasMore: Bool

    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        self.init(fields: try JSONValue.object(body, httpStatus: httpStatus))
    }

    /// The page's fields, already parsed (a saved page inside another document: `ServerAPICapture`).
    public init(fields: [String: JSONValue]) {
        let listed: [JSONValue] = if case .array(let elements)? = fields["signedTransactions"] { elements } else { [] }
        signedTransactions = listed.compactMap { if case .string(let jws) = $0 { jws } else { nil } }
        revision = fields.text("revision")
        hasMore = fields.flag("hasMore") ?? false
    }
}

/// One page of Get Notification History (`POST /inApps/v1/notifications/history`, a
/// `NotificationHistoryResponse`): the V2 notifications Apple sent, oldest first, each with its
/// send attempts, and the token for the next page. The payloads are believed only once verified,
/// as a notification's are (they are the same `signedPayload`).
public struct NotificationHistoryPage: Sendable {
    public struct Item: Sendable {
        public let signedPayload: String
        /// `sendAttemptResult` of each attempt, oldest first: `SUCCESS`, `NO_RESPONSE`, …
        public let attempts: [String]

        /// Apple never got a 200 from the notification URL for it.
        public var neverDelivered: Bool { !attempts.contains("SUCCESS") }

        /// `{"signedPayload": …, "sendAttempts": [{"sendAttemptResult": …}, …]}`: a history entry,
        /// or a test notification's status (`CheckTestNotificationResponse`).
        public init?(_ fields: [String: JSONValue]) {
            guard let payload = fields.text("signedPayload") else { return nil }
            signedPayload = payload
            attempts = (fields["sendAttempts"]?.objects ?? []).compactMap { $0.text("sendAttemptResult") }
        }
    }

    public let notifications: [Item]
    /// The token to ask the next page with (`?paginationToken=`), when `hasMore`.
    public let paginationToken: String?
    public let hasMore: Bool

    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        let fields = try JSONValue.object(body, httpStatus: httpStatus)
        notifications = (fields["notificationHistory"]?.objects ?? []).compactMap(Item.init)
        paginationToken = fields.text("paginationToken")
        hasMore = fields.flag("hasMore") ?? false
    }
}

/// The body of the Server API's error answers: `{"errorCode": 4040010, "errorMessage": "…"}`.
public struct ServerAPIErrorBody: Sendable, Equatable {
    /// `TransactionIdNotFoundError`: the transaction is not in this environment (try the other).
    public static let transactionIDNotFound = 4_040_010

    public let code: Int
    public let message: String?

    /// Nil when the body is not such an object (a proxy's HTML page, say).
    public init?(body: some Collection<UInt8>) {
        guard case .object(let fields)? = try? JSONValue.parse(body), let code = fields.int("errorCode") else { return nil }
        self.code = code
        message = fields.text("errorMessage")
    }
}

extension VerifyReceiptResponse {
    /// What the Server API's signed payloads say, as the verifyReceipt response that would say the
    /// same, so that one analysis serves both backends: the transactions as `latest_receipt_info`,
    /// the renewal infos as `pending_renewal_info`, and Apple's latest signing date as the
    /// receipt's request date (the moment the answer describes).
    ///
    /// - Parameters:
    ///   - transactions, renewals: the verified payloads of `signedTransactionInfo` (of the
    ///     statuses, or of the transaction history) and `signedRenewalInfo`.
    ///   - bundleID: the app's: a payload signed for another app is refused, whatever its signature.
    ///   - showsEveryRefund: whether `transactions` hold the customer's history (or its refunded
    ///     transactions), not only the latest of each subscription.
    /// - Throws: `SignedPayloadError` when a payload is not a JSON object, lacks its ids, or names another app.
    public init(
        signedTransactions transactions: [Data], renewals: [Data], environment: AppStoreEnvironment?, bundleID: String,
        showsEveryRefund: Bool
    ) throws(SignedPayloadError) {
        let transactionFields = try transactions.map { payload throws(SignedPayloadError) in try Self.fields(payload, for: bundleID) }
        let renewalFields = try renewals.map { payload throws(SignedPayloadError) in try Self.fields(payload, for: bundleID) }
        var read: [ReceiptTransaction] = []
        for fields in transactionFields {
            guard let transaction = ReceiptTransaction(signed: fields) else {
                throw .unreadable("a signed transaction has no transactionId or originalTransactionId")
            }
            read.append(transaction)
        }
        let signedDates = (transactionFields + renewalFields).compactMap { $0.instant("signedDate") }
        httpStatus = 200
        status = 0
        isRetryable = nil
        self.environment = environment
        receipt = Receipt(
            bundleID: bundleID, receiptType: environment?.rawValue, creationDate: nil, requestDate: signedDates.max(), inApp: [])
        latestReceiptInfo = ReceiptTransaction.deduplicated(read)
        latestExpiredReceiptInfo = []
        pendingRenewalInfo = PendingRenewal.deduplicated(renewalFields.map(PendingRenewal.init(signed:)))
        latestReceipt = nil
        exception = nil
        self.showsEveryRefund = showsEveryRefund
    }

    /// A payload's fields, once it is known to be the app's. Apple puts `bundleId` in every
    /// transaction; renewal infos carry none, and are bound by their transaction instead.
    private static func fields(_ payload: Data, for bundleID: String) throws(SignedPayloadError) -> [String: JSONValue] {
        guard case .object(let fields)? = try? JSONValue.parse(payload) else {
            throw .unreadable("a signed payload is not a JSON object")
        }
        if let signedFor = fields.text("bundleId"), signedFor != bundleID {
            throw .otherApp(bundleID: signedFor)
        }
        return fields
    }
}

/// A verified signed payload that cannot be used.
public enum SignedPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadable(String)
    /// Signed by Apple, but for another app: the configured bundle id is not the one it names.
    case otherApp(bundleID: String)

    public var description: String {
        switch self {
        case .unreadable(let reason): reason
        case .otherApp(let bundleID): "the signed payload belongs to another app (bundle id \(bundleID))"
        }
    }
}
