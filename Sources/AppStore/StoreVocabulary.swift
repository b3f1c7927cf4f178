/// The App Store environment a receipt belongs to (`environment` in verifyReceipt responses).
public enum AppStoreEnvironment: String, Sendable, Codable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"

    /// Reads `environment` ("Production", "Sandbox") or a receipt's `receipt_type`
    /// ("Production", "ProductionSandbox"), in any letter case.
    init?(wireName: String) {
        switch wireName.lowercased() {
        case "production": self = .production
        case "sandbox", "productionsandbox": self = .sandbox
        default: return nil
        }
    }
}

/// Who owns a transaction (`in_app_ownership_type`): the buyer, or a family member who benefits
/// through Family Sharing.
public enum OwnershipType: String, Sendable, Codable, CaseIterable {
    case purchased = "PURCHASED"
    case familyShared = "FAMILY_SHARED"
}

/// What Apple says `expiration_intent` means. Unknown codes have no meaning rather than a guessed one.
public func expirationIntentMeaning(_ intent: Int) -> String? {
    switch intent {
    case 1: "customer cancelled"
    case 2: "billing error"
    case 3: "customer did not consent to a price increase"
    case 4: "product not available at renewal"
    case 5: "unknown error"
    default: nil
    }
}

/// What Apple says `cancellation_reason` means on a refunded or revoked transaction.
public func cancellationReasonMeaning(_ reason: Int) -> String? {
    switch reason {
    case 1: "customer reported an actual or perceived issue within the app"
    case 0: "another reason, such as an accidental purchase"
    default: nil
    }
}

/// What a cancellation means for a transaction of `ownership`: one shared through Family Sharing is
/// revoked (the purchaser stopped sharing it, or was refunded), whatever reason code it carries.
public func cancellationMeaning(_ reason: Int?, ownership: OwnershipType?) -> String? {
    if ownership == .familyShared { return "revoked: Family Sharing of this purchase ended (the purchaser stopped sharing it or was refunded)" }
    return reason.flatMap(cancellationReasonMeaning)
}
