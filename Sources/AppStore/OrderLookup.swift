/// Apple's answer to Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`, an
/// `OrderLookupResponse`): whether the order id a customer quotes from Apple's receipt email is
/// one of the app's orders, and the signed transactions it holds. Apple serves it in production
/// only. The transactions are believed only once verified, as every other signed transaction.
public struct OrderLookupResponse: Sendable {
    /// `status` 0: Apple knows the order for this app, and lists its transactions.
    public static let valid = 0
    /// `status` 1: Apple knows no such order for this app (a 200, not an error).
    public static let invalid = 1

    /// `OrderLookupStatus`; nil when Apple's answer names none.
    public let status: Int?
    /// JWS of the order's transactions (`JWSTransactionDecodedPayload`); none when the order is unknown.
    public let signedTransactions: [String]

    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        let fields = try JSONValue.object(body, httpStatus: httpStatus)
        status = fields.int("status")
        let listed: [JSONValue] = if case .array(let elements)? = fields["signedTransactions"] { elements } else { [] }
        signedTransactions = listed.compactMap { if case .string(let jws) = $0 { jws } else { nil } }
    }

    /// Whether `text` can be an order id: Apple's are letters and digits (`MQ5V6W7X8Y`). Anything
    /// else is no order, and is never put in a URL.
    public static func isOrderID(_ text: some StringProtocol) -> Bool {
        (1...64).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }
}
