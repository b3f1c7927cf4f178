import Foundation

/// A subscription's nights among every N, for what the fleet does for each subscription every N
/// nights (the audit, the read of its refunds): the nights whose number (whole days since 1970, UTC)
/// falls on its `slot` (its ledger id) modulo N. Spread by slot, each night holds an even share of
/// the fleet, and two duties with the same N fall on the same nights.
public struct NightlyTurn: Sendable, Equatable {
    public var slot: Int64

    public init(slot: Int64) {
        self.slot = slot
    }

    /// Nights from `night` to the subscription's next in every `nights` (0: `night` is one).
    public func nightsUntilTurn(from night: Int64, every nights: Int64) -> Int64 {
        let every = max(1, nights)
        return ((slot - night) % every + every) % every
    }

    /// The number of the night (whole days since 1970, UTC) that `date` falls in.
    public static func night(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))
    }
}
