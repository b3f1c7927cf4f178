/// Apple's rules for renewal-date extensions (Extend a Subscription Renewal Date, and for All
/// Active Subscribers), and its answers, read tolerantly.
public enum RenewalExtension {
    /// `extendByDays`: Apple refuses anything else (4000009).
    public static let days = 1...90
    /// A subscription takes at most this many extensions within `window` (4030005).
    public static let maximumPerWindow = 2
    /// The window of `maximumPerWindow`, in days.
    public static let windowDays = 365
    /// `requestIdentifier` is at most this long (4000011).
    public static let maximumRequestIdentifierLength = 128

    /// Apple's error codes for extensions, and what each asks of the operator.
    public static let refusals: [Int: String] = [
        4_000_008: "the original transaction id is not one Apple accepts",
        4_000_009: "Apple takes 1 to 90 days",
        4_000_010: "the reason code is not one Apple knows",
        4_000_011: "the request identifier is not one Apple accepts",
        4_000_023: "Apple knows no such product",
        4_030_004: "the subscription is not in a paid, active period (a free offer, billing retry, grace or expired)",
        4_030_005: "the subscription already had two extensions within 365 days",
        4_030_007: "the customer has it through Family Sharing: extend the organizer's subscription",
        4_040_005: "Apple does not know the original transaction in this environment",
        4_040_009: "Apple knows no extension request by that product and identifier",
    ]
}

/// Why Apple is asked to extend (`extendReasonCode`).
public enum ExtendReason: Int, Sendable, CaseIterable {
    case undeclared = 0
    case customerSatisfaction = 1
    case other = 2
    case serviceIssue = 3

    /// As operators type it (`--reason`, the console's form).
    public var name: String {
        switch self {
        case .undeclared: "undeclared"
        case .customerSatisfaction: "customer-satisfaction"
        case .other: "other"
        case .serviceIssue: "service-issue"
        }
    }

    /// By its name or Apple's number.
    public init?(name: String) {
        guard let reason = Self.allCases.first(where: { $0.name == name || String($0.rawValue) == name }) else { return nil }
        self = reason
    }
}

/// `ExtendRenewalDateResponse`: what became of one subscription's extension.
public struct ExtendedRenewal: Sendable, Equatable {
    public let originalTransactionID: String?
    public let webOrderLineItemID: String?
    public let success: Bool
    /// The subscription's new expiry, when it succeeded.
    public let effectiveDate: Instant?

    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        let fields = try JSONValue.object(body, httpStatus: httpStatus)
        originalTransactionID = fields.text("originalTransactionId")
        webOrderLineItemID = fields.text("webOrderLineItemId")
        success = fields.flag("success") ?? false
        effectiveDate = fields["effectiveDate"]?.int64.flatMap(Instant.init(millisecondsSince1970:))
    }
}

/// `MassExtendRenewalDateStatusResponse`: how far Apple got with extending every active subscriber of a product.
public struct MassExtensionStatus: Sendable, Equatable {
    public let requestIdentifier: String?
    public let complete: Bool
    /// When Apple finished; the counts come with it.
    public let completeDate: Instant?
    public let succeededCount: Int?
    public let failedCount: Int?

    public init(body: some Collection<UInt8>, httpStatus: Int) throws(ResponseDecodingError) {
        let fields = try JSONValue.object(body, httpStatus: httpStatus)
        requestIdentifier = fields.text("requestIdentifier")
        complete = fields.flag("complete") ?? false
        completeDate = fields["completeDate"]?.int64.flatMap(Instant.init(millisecondsSince1970:))
        succeededCount = fields.int("succeededCount")
        failedCount = fields.int("failedCount")
    }
}
