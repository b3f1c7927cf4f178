import Foundation

/// What one verifyReceipt response (or the Server API's answers, read the same way) says about each
/// subscription in it, and its one-time purchases apart: the support engineer's view behind
/// `receiptfleet inspect`.
public struct Inspection: Sendable, Encodable {
    public struct Subscription: Sendable, Encodable {
        public var originalTransactionID: String
        public var state: SubscriptionState
        public var events: [SubscriptionEvent]
        public var transactions: Int

        enum CodingKeys: String, CodingKey {
            case originalTransactionID = "original_transaction_id"
            case state, events, transactions
        }
    }

    public var status: Int
    public var environment: AppStoreEnvironment?
    /// The status policy's verdict, in words.
    public var action: String
    public var subscriptions: [Subscription]
    /// Non-consumables and non-renewing subscriptions, which have no subscription state.
    public var purchases: [Purchase]

    /// Decodes `body` and analyses every subscription in it (or only `originalTransactionID`),
    /// against `stored` when given, and lists its one-time purchases (products in
    /// `nonRenewingProductIDs` count as such too). A decodable response with an error status yields
    /// neither; an unreadable body throws `ResponseDecodingError`.
    public init(
        body: [UInt8], httpStatus: Int = 200, now: Date, stored: SubscriptionState? = nil,
        originalTransactionID: String? = nil, nonRenewingProductIDs: Set<String> = []
    ) throws {
        try self.init(
            response: VerifyReceiptResponse(body: body, httpStatus: httpStatus), now: now, stored: stored,
            originalTransactionID: originalTransactionID, nonRenewingProductIDs: nonRenewingProductIDs)
    }

    /// The same for a response already read: verifyReceipt's, or the Server API's answers read
    /// into its model (`ServerAPICapture`), so both backends are judged alike.
    public init(
        response: VerifyReceiptResponse, now: Date, stored: SubscriptionState? = nil, originalTransactionID: String? = nil,
        nonRenewingProductIDs: Set<String> = []
    ) throws {
        status = response.status
        environment = response.effectiveEnvironment
        action = Self.describe(StatusPolicy().action(for: VerificationOutcome(response), attempt: 1))
        purchases = OneTimePurchases(response, nonRenewingProductIDs: nonRenewingProductIDs).purchases
        guard response.status == 0 || response.status == 21006 else {
            subscriptions = []
            return
        }
        let ids = originalTransactionID.map { [$0] }
            ?? OneTimePurchases.subscriptionIDs(in: response, nonRenewingProductIDs: nonRenewingProductIDs)
        subscriptions = try ids.map { id in
            let analysis = try SubscriptionAnalyzer.analyze(
                stored: stored?.originalTransactionID == id ? stored : nil,
                response: response, originalTransactionID: id, now: now)
            return Subscription(
                originalTransactionID: id, state: analysis.state, events: analysis.events,
                transactions: analysis.transactions.count)
        }
    }

    static func describe(_ action: VerificationAction) -> String {
        switch action {
        case .success: "valid"
        case .expiredButValid: "valid (21006: expired iOS 6 receipt)"
        case .retryOnSandbox: "sandbox receipt: verify it against the sandbox"
        case .retryOnProduction: "production receipt: verify it against production"
        case .retryable(let upstreamUnavailable):
            upstreamUnavailable ? "retry later: the App Store is unavailable" : "retry later"
        case .unavailableUnlessPersistent(let reason): "retry later; if it never passes, \(reason)"
        case .throttled(let retryAfter): "retry after \(retryAfter): the endpoint's rate limit is spent"
        case .permanent(let reason): "permanently invalid: \(reason)"
        case .configurationError(let reason): "configuration error: \(reason)"
        }
    }
}
