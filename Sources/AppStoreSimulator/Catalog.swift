/// The simulated apps' subscription products and how long things last in each environment.
public enum Catalog {
    /// The first app's: the Server API's and every receipt's that names no other (`ReceiptToken.app`).
    static let bundleID = bundleIDs[0]
    /// The developer account's apps, by `ReceiptToken.app`; they sell the same plans.
    public static let bundleIDs = ["com.receiptfleet.demo", "com.receiptfleet.journal"]
    static let appItemID: Int64 = 1_460_000_001

    /// The main subscription group: premium (level 1) above pro (level 2).
    static let mainGroup = "20537620"
    /// A second group, for receipts with two subscriptions.
    static let addonGroup = "20537621"

    static let proMonthly = Plan(productID: "com.receiptfleet.demo.pro.monthly", group: mainGroup, length: .month)
    static let premiumMonthly = Plan(productID: "com.receiptfleet.demo.premium.monthly", group: mainGroup, length: .month)
    static let premiumYearly = Plan(productID: "com.receiptfleet.demo.premium.yearly", group: mainGroup, length: .year)
    static let addonMonthly = Plan(productID: "com.receiptfleet.demo.addon.monthly", group: addonGroup, length: .month)

    /// Every product the apps sell.
    /// The offer code a customer redeems (`offer_code_ref_name`, the Server API's `offerIdentifier`).
    static let offerCode = "WELCOME_BACK_HALF_PRICE"
    static let productIDs: Set<String> = Set([proMonthly, premiumMonthly, premiumYearly, addonMonthly].map(\.productID))
}

/// One subscription product.
struct Plan: Sendable, Equatable {
    enum Length: Sendable { case month, year }

    let productID: String
    let group: String
    let length: Length
}

/// How long periods, trials, grace and billing retry last. The sandbox compresses time as Apple's does:
/// a month is five minutes, a year an hour, and a subscription renews at most six times.
struct Durations: Sendable {
    let month: Int64
    let year: Int64
    let trial: Int64
    let grace: Int64
    let billingRetry: Int64
    /// Renewals after which auto-renew stops by itself; nil means never.
    let maxRenewals: Int?

    /// `count` days as this environment's clock runs them (a month is 30).
    func days(_ count: Int) -> Int64 { Int64(count) * month / 30 }

    func length(of plan: Plan) -> Int64 {
        plan.length == .month ? month : year
    }

    static func of(_ environment: SimulatedEnvironment) -> Durations {
        environment == .production ? production : sandbox
    }

    static let production = Durations(
        month: 30 * day, year: 365 * day, trial: 7 * day, grace: 16 * day, billingRetry: 60 * day, maxRenewals: nil)
    static let sandbox = Durations(
        month: 5 * minute, year: 60 * minute, trial: 3 * minute, grace: 2 * minute, billingRetry: 10 * minute,
        maxRenewals: 6)

    static let second: Int64 = 1000
    static let minute: Int64 = 60 * second
    static let hour: Int64 = 60 * minute
    static let day: Int64 = 24 * hour
}
