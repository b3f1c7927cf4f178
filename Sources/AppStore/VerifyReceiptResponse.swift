/// Apple's answer to one verifyReceipt request, read tolerantly.
///
/// iOS 7+ and iOS 6 responses read into the same shape: where iOS 6 has single objects
/// (`receipt` as the transaction itself, `latest_receipt_info`, `latest_expired_receipt_info`)
/// they become one-element lists, and its top-level renewal fields become a `PendingRenewal`.
/// Unknown fields are ignored; repeated transactions are merged.
public struct VerifyReceiptResponse: Sendable, Equatable {
    /// The HTTP status the body came with.
    public let httpStatus: Int
    /// Apple's `status`: 0 when the receipt is valid; see `StatusPolicy` for the rest.
    public let status: Int
    /// `is-retryable` or `is_retryable`, documented for statuses 21100–21199.
    public let isRetryable: Bool?
    public let environment: AppStoreEnvironment?
    public let receipt: Receipt?
    public let latestReceiptInfo: [ReceiptTransaction]
    public let latestExpiredReceiptInfo: [ReceiptTransaction]
    public let pendingRenewalInfo: [PendingRenewal]
    /// The newest version of the receipt, to store in place of the one sent.
    public let latestReceipt: ReceiptData?
    /// An undocumented explanation some error responses carry, e.g. a Java exception message.
    public let exception: String?
    /// Whether the answer lists every transaction Apple refunded, earlier periods' too: a receipt
    /// does; the Server API's statuses show only each subscription's latest transaction.
    public let showsEveryRefund: Bool

    /// The decoded `receipt` object.
    public struct Receipt: Sendable, Equatable {
        public let bundleID: String?
        /// "Production" or "ProductionSandbox"; absent from iOS 6 receipts.
        public let receiptType: String?
        public let creationDate: Instant?
        public let requestDate: Instant?
        /// `in_app`; for an iOS 6 receipt, the one transaction the receipt is.
        public let inApp: [ReceiptTransaction]
    }

    /// Reads a verifyReceipt body. Never traps, whatever the bytes.
    /// - Throws: `ResponseDecodingError` when the body is not a JSON object with a readable status.
    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        let fields = try JSONValue.object(body, httpStatus: httpStatus)
        guard let response = Self(fields: fields, httpStatus: httpStatus) else {
            throw ResponseDecodingError(.noStatus, httpStatus: httpStatus, body: body)
        }
        self = response
    }

    /// Reads a verifyReceipt answer already parsed (a V1 notification's `unified_receipt`); nil
    /// without a readable status.
    public init?(fields: [String: JSONValue], httpStatus: Int) {
        guard let status = fields.int("status") else { return nil }
        self.httpStatus = httpStatus
        self.status = status
        isRetryable = fields.flag("is-retryable") ?? fields.flag("is_retryable")
        environment = fields.text("environment").flatMap(AppStoreEnvironment.init(wireName:))
        receipt = fields["receipt"]?.objects.first.map(Receipt.init)
        latestReceiptInfo = Self.transactions(fields["latest_receipt_info"])
        latestExpiredReceiptInfo = Self.transactions(fields["latest_expired_receipt_info"])
        latestReceipt = fields.text("latest_receipt").map(ReceiptData.init(base64:))
        exception = fields.text("exception")
        showsEveryRefund = true

        var renewals = (fields["pending_renewal_info"]?.objects ?? []).map(PendingRenewal.init(_:))
        if PendingRenewal.fieldNames.contains(where: { fields[$0] != nil }) {
            // iOS 6: the renewal fields sit next to the transaction they concern.
            var topLevel = PendingRenewal(fields)
            let subject = (latestReceiptInfo + latestExpiredReceiptInfo + (receipt?.inApp ?? [])).first
            topLevel.originalTransactionID = topLevel.originalTransactionID ?? subject?.originalTransactionID
            topLevel.productID = topLevel.productID ?? subject?.productID
            renewals.append(topLevel)
        }
        pendingRenewalInfo = PendingRenewal.deduplicated(renewals)
    }

    /// Every transaction in the response, de-duplicated: `latest_receipt_info` first (Apple's
    /// freshest view), then `latest_expired_receipt_info`, then `receipt.in_app`.
    public var allTransactions: [ReceiptTransaction] {
        ReceiptTransaction.deduplicated(latestReceiptInfo + latestExpiredReceiptInfo + (receipt?.inApp ?? []))
    }

    /// The environment from `environment`, or else from the receipt's `receipt_type`.
    public var effectiveEnvironment: AppStoreEnvironment? {
        environment ?? receipt?.receiptType.flatMap(AppStoreEnvironment.init(wireName:))
    }

    static func transactions(_ value: JSONValue?) -> [ReceiptTransaction] {
        ReceiptTransaction.deduplicated((value?.objects ?? []).compactMap(ReceiptTransaction.init(_:)))
    }
}

extension VerifyReceiptResponse.Receipt {
    init(_ fields: [String: JSONValue]) {
        bundleID = fields.text(anyOf: "bundle_id", "bid")
        receiptType = fields.text("receipt_type")
        creationDate = fields.instant("receipt_creation_date")
        requestDate = fields.instant("request_date")
        if let inApp = fields["in_app"] {
            self.inApp = VerifyReceiptResponse.transactions(inApp)
        } else {
            // iOS 6: the receipt is the transaction.
            self.inApp = ReceiptTransaction(fields).map { [$0] } ?? []
        }
    }
}

extension JSONValue {
    /// An answer's body as a JSON object, or the error that says what it was instead.
    static func object(_ body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) -> [String: JSONValue] {
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            throw ResponseDecodingError(.notJSON, httpStatus: httpStatus, body: body)
        }
        guard case .object(let fields) = document else {
            throw ResponseDecodingError(.notAnObject, httpStatus: httpStatus, body: body)
        }
        return fields
    }
}
