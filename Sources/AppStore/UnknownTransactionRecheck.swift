import Foundation

extension AppStoreEnvironment {
    /// The one environment tonight's re-check asks about a transaction Apple knew in neither (an
    /// invalid subscription on the Server API). Apple knows a transaction in one environment only,
    /// and one it did not know anywhere is re-checked nightly through its watch period in case it
    /// turns up (a purchase Apple had not recorded yet): asking both environments every night would
    /// double the cost of subscriptions that are almost always gone for good.
    ///
    /// The night and the transaction pick the environment, through a mixing hash rather than the
    /// night's parity: each re-check asks either with even odds whatever the interval between them
    /// (the parity would ask one environment forever at a `refunded-recheck-hours` of 48), so both
    /// are asked over a watch period of 30 nightly re-checks, for half the calls.
    public static func recheck(ofUnknown originalTransactionID: String, filedIn filed: AppStoreEnvironment, on now: Date)
        -> AppStoreEnvironment
    {
        let night = UInt64(max(0, NightlyTurn.night(of: now)))
        let id = UInt64(originalTransactionID.suffix(18)) ?? 0
        // SplitMix64's finaliser: each bit of the night and the id reaches the top bit.
        var mixed = (night &+ id) &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return mixed >> 63 == 0 ? filed : filed.other
    }

    /// The environment that is not this one.
    public var other: AppStoreEnvironment { self == .production ? .sandbox : .production }
}
