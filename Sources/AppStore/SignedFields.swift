// The App Store Server API signs a transaction (`JWSTransactionDecodedPayload`) and a
// subscription's renewal plans (`JWSRenewalInfoDecodedPayload`) with camelCase names, dates as
// milliseconds and flags as numbers. Their names are translated into verifyReceipt's, and the
// payloads read by verifyReceipt's readers, by the same tolerant rules (a missing or surprising
// field is nil), so that both backends feed one analysis and announce the same events. Only the
// offers are named another way.

/// `offerType` in both payloads: how the customer came to the price they pay.
enum SignedOfferType: Int {
    case introductory = 1
    case promotional = 2
    case offerCode = 3
    case winBack = 4
}

extension ReceiptTransaction {
    /// Reads a signed transaction; nil without `transactionId` or `originalTransactionId`.
    init?(signed fields: [String: JSONValue]) {
        self.init(fields.inVerifyReceiptNames)
        let offer = fields.int("offerType").flatMap(SignedOfferType.init(rawValue:))
        (isTrialPeriod, isInIntroOfferPeriod) = Self.introductoryPeriod(offer, discount: fields.text("offerDiscountType"))
        offerCodeRefName = offer == .offerCode ? fields.text("offerIdentifier") : nil
        promotionalOfferID = offer == .promotional ? fields.text("offerIdentifier") : nil
    }

    /// verifyReceipt's two flags: a free trial is `is_trial_period`, a paid introductory price
    /// `is_in_intro_offer_period`. An introductory offer of unknown kind (payloads before Apple
    /// added `offerDiscountType`) leaves both unknown.
    private static func introductoryPeriod(_ offer: SignedOfferType?, discount: String?) -> (trial: Bool?, intro: Bool?) {
        guard offer == .introductory else { return (false, false) }
        switch discount {
        case "FREE_TRIAL": return (true, false)
        case "PAY_AS_YOU_GO", "PAY_UP_FRONT": return (false, true)
        default: return (nil, nil)
        }
    }
}

extension PendingRenewal {
    /// Reads signed renewal info.
    init(signed fields: [String: JSONValue]) {
        self.init(fields.inVerifyReceiptNames)
        let offer = fields.int("offerType").flatMap(SignedOfferType.init(rawValue:))
        offerCodeRefName = offer == .offerCode ? fields.text("offerIdentifier") : nil
        promotionalOfferID = offer == .promotional ? fields.text("offerIdentifier") : nil
    }
}

extension [String: JSONValue] {
    /// A signed payload's fields under verifyReceipt's names: `webOrderLineItemId` is
    /// `web_order_line_item_id`, and the three fields the payloads call otherwise take
    /// verifyReceipt's word.
    var inVerifyReceiptNames: [String: JSONValue] {
        // Apple spells each field once; of a field spelled twice (`productId`, `product_id`), one is read.
        Dictionary(map { (Self.verifyReceiptNames[$0.key] ?? Self.snakeCased($0.key), $0.value) }) { first, _ in first }
    }

    private static let verifyReceiptNames = [
        // A refund or a revocation; verifyReceipt calls both a cancellation.
        "revocationDate": "cancellation_date", "revocationReason": "cancellation_reason",
        // 0: not yet answered, 1: accepted.
        "priceIncreaseStatus": "price_consent_status",
    ]

    private static func snakeCased(_ name: String) -> String {
        name.reduce(into: "") { snake, character in
            if character.isUppercase { snake += "_" + character.lowercased() } else { snake.append(character) }
        }
    }
}
