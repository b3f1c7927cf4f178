/// Apple's rules for Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{id}`),
/// the answer to a CONSUMPTION_REQUEST notification, and the fleet's own rule for what it says.
public enum ConsumptionInformation {
    /// Apple takes an answer within 12 hours of the notification's `signedDate`.
    public static let window: Duration = .seconds(12 * 3_600)
    /// `consumptionPercentage` is in milliunits: 100000 is all of it.
    public static let whole = 100_000

    /// Apple's error codes for this endpoint, and what each means for the request.
    public static let refusals: [Int: String] = [
        4_000_006: "the transaction id is not one Apple accepts",
        4_000_035: "Apple takes an answer only when the customer consented",
        4_000_036: "the delivery status is not one Apple knows",
        4_000_041: "sampleContentProvided is missing or not a boolean",
        4_000_044: "the refund preference is not one Apple knows",
        4_000_048: "Apple does not take an app transaction id here",
        4_000_185: "the customer has it through Family Sharing, which Apple does not take answers for",
        4_000_209: "Apple computes the consumption of an auto-renewable subscription itself",
        4_040_010: "Apple does not know the transaction in this environment",
    ]
}

/// `deliveryStatus`: whether the app delivered a purchase that works.
public enum DeliveryStatus: String, Sendable, CaseIterable {
    case delivered = "DELIVERED"
    case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
    case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
    case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
    case undeliveredOther = "UNDELIVERED_OTHER"
}

/// `refundPreference`: the developer's wish for the refund; Apple decides.
public enum RefundPreference: String, Sendable, CaseIterable {
    case decline = "DECLINE"
    case grantFull = "GRANT_FULL"
    case grantProrated = "GRANT_PRORATED"

    /// As operators write it: `decline`, `grant-full`, `grant-prorated` (Apple's spelling too).
    public init?(argument: String) {
        self.init(rawValue: argument.replacingOccurrences(of: "-", with: "_").uppercased())
    }

    public var argument: String { rawValue.lowercased().replacingOccurrences(of: "_", with: "-") }
}

/// What kind of in-app purchase a transaction is (its signed `type`).
public enum PurchaseKind: String, Sendable, CaseIterable {
    case autoRenewable = "Auto-Renewable Subscription"
    case nonRenewing = "Non-Renewing Subscription"
    case consumable = "Consumable"
    case nonConsumable = "Non-Consumable"
}

/// What the fleet knows of the purchase a customer asked Apple to refund.
public struct ConsumptionFacts: Sendable, Equatable {
    /// nil when the notification did not say (then no percentage is sent).
    public var kind: PurchaseKind?
    public var familyShared: Bool
    /// The customer's account consented to sharing consumption data with Apple.
    public var consented: Bool
    /// The entitlement the transaction bought was active: the app delivered it.
    public var delivered: Bool
    /// A free trial or an introductory offer came before or with it.
    public var sampleContent: Bool
    /// For a non-renewing subscription: the share of its period elapsed when Apple asked (milliunits).
    public var elapsedShare: Int?

    public init(
        kind: PurchaseKind?, familyShared: Bool, consented: Bool, delivered: Bool, sampleContent: Bool, elapsedShare: Int? = nil
    ) {
        (self.kind, self.familyShared, self.consented, self.delivered) = (kind, familyShared, consented, delivered)
        (self.sampleContent, self.elapsedShare) = (sampleContent, elapsedShare)
    }
}

/// Why a consumption request gets no answer.
public enum ConsumptionWithheld: String, Error, Sendable, Equatable {
    /// Without the customer's consent nothing is sent (Apple refuses `customerConsented` other than true).
    case noConsent = "no_consent"
    /// Apple refuses answers about Family Sharing transactions.
    case familyShared = "family_shared"
}

/// The `ConsumptionRequest` body the fleet sends: `customerConsented` is always true (an answer
/// without consent is never sent).
public struct ConsumptionAnswer: Sendable, Equatable {
    public var deliveryStatus: DeliveryStatus
    public var sampleContentProvided: Bool
    public var refundPreference: RefundPreference?
    /// Only where Apple takes it: never for an auto-renewable subscription.
    public var consumptionPercentage: Int?

    public init(
        deliveryStatus: DeliveryStatus, sampleContentProvided: Bool, refundPreference: RefundPreference? = nil,
        consumptionPercentage: Int? = nil
    ) {
        (self.deliveryStatus, self.sampleContentProvided) = (deliveryStatus, sampleContentProvided)
        (self.refundPreference, self.consumptionPercentage) = (refundPreference, consumptionPercentage)
    }

    /// What the fleet answers about `facts` with the app's `preference`, or why it answers nothing.
    /// The percentage: 0 unless delivered; a delivered non-consumable is wholly consumed, a
    /// non-renewing subscription by its elapsed share; a consumable's the fleet cannot know
    /// (left out), and Apple computes an auto-renewable subscription's itself (and refuses one).
    /// GRANT_PRORATED needs a percentage strictly between 0 and whole: without one it is left out.
    public static func decide(_ facts: ConsumptionFacts, preference: RefundPreference?) -> Result<ConsumptionAnswer, ConsumptionWithheld> {
        if facts.familyShared { return .failure(.familyShared) }
        guard facts.consented else { return .failure(.noConsent) }
        var percentage: Int?
        switch facts.kind {
        case .autoRenewable, nil: percentage = nil
        case .nonConsumable: percentage = facts.delivered ? ConsumptionInformation.whole : 0
        case .nonRenewing: percentage = facts.delivered ? facts.elapsedShare.map { min(max($0, 0), ConsumptionInformation.whole) } : 0
        case .consumable: percentage = facts.delivered ? nil : 0
        }
        var preference = preference
        if preference == .grantProrated, facts.kind != .autoRenewable,
           !(percentage.map { $0 > 0 && $0 < ConsumptionInformation.whole } ?? false) {
            preference = nil
        }
        return .success(ConsumptionAnswer(
            deliveryStatus: facts.delivered ? .delivered : .undeliveredOther, sampleContentProvided: facts.sampleContent,
            refundPreference: preference, consumptionPercentage: percentage))
    }

    /// The JSON body, keys in a fixed order.
    public var body: [UInt8] {
        var json = Array("{\"customerConsented\":true,\"deliveryStatus\":\"\(deliveryStatus.rawValue)\",".utf8)
        json += Array("\"sampleContentProvided\":\(sampleContentProvided)".utf8)
        if let refundPreference { json += Array(",\"refundPreference\":\"\(refundPreference.rawValue)\"".utf8) }
        if let consumptionPercentage { json += Array(",\"consumptionPercentage\":\(consumptionPercentage)".utf8) }
        return json + [UInt8(ascii: "}")]
    }
}
