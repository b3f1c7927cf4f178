import AppStore
import Foundation

/// Whether a customer has access by a subscription now: the one rule the API and the ops console
/// both show.
public struct Entitlement: Sendable, Equatable, Encodable {
    /// Whether the customer has access now.
    public var active: Bool
    /// Until when, as far as the fleet knows (the period's end, or the grace period's); null when
    /// unknown, never left out (docs/openapi.yaml `Entitlement`).
    @NullWhenAbsent public var until: Instant?

    public init(active: Bool, until: Instant?) {
        self.active = active
        self.until = until
    }
}

extension SubscriptionRecord {
    /// Access lasts to the period's end while active, to the grace period's end in grace, and
    /// not at all in any other status.
    public func entitlement(at now: Date) -> Entitlement {
        let until: Instant? = switch status {
        case .active: state?.expiresAt
        case .inGrace: state?.gracePeriodExpiresAt ?? state?.expiresAt
        default: nil
        }
        return Entitlement(active: until.map { $0 > Instant(now) } ?? false, until: until)
    }
}
