/// The plan of one subscription (one original_transaction_id): when it starts and which single twist,
/// if any, happens to it. `Timeline` plays it forward to any moment.
struct ChainScript: Sendable {
    /// Position of the subscription on its receipt (0 or 1); part of its identifiers.
    let chain: Int
    let firstPlan: Plan
    /// First purchase, ms.
    let start: Int64
    let startsWithTrial: Bool
    let ownership: Ownership

    var autoRenewOffAt: Int64?
    var refund: (at: Int64, reason: Int)?
    var upgrade: (at: Int64, to: Plan)?
    var planChange: (at: Int64, to: Plan)?
    var billingFailure: BillingFailure?
    /// After an auto-renew-off expiry, the customer subscribes again this long (ms) later.
    var resubscribeAfter: Int64?
    /// Apple takes the refund back this long (ms) after making it.
    var refundReversedAfter: Int64?
    /// At each `at`, the current period's end moves `by` ms later: the lifecycle's own, and those
    /// the Server API granted since (`SimulatedReceipt.extended`), in time order.
    var renewalExtensions: [(at: Int64, by: Int64)] = []
    /// A price increase asked at `askedAt`; the customer agrees `agreesAfter` ms later (never: nil).
    var priceIncrease: (askedAt: Int64, agreesAfter: Int64?)?
    /// At `at`, Apple refunds the period before the one running then; answers show it from `shownAfter` ms later.
    var earlierRefund: (at: Int64, shownAfter: Int64)?
    /// At this moment the customer redeems `Catalog.offerCode`; the next period is bought with it.
    var offerRedeemedAt: Int64?

    init(chain: Int = 0, plan: Plan, start: Int64, startsWithTrial: Bool = false, ownership: Ownership = .purchased) {
        self.chain = chain
        self.firstPlan = plan
        self.start = start
        self.startsWithTrial = startsWithTrial
        self.ownership = ownership
    }
}

/// A renewal whose charge fails.
struct BillingFailure: Sendable {
    /// Which renewal fails (1 is the first renewal).
    let renewal: Int
    let hasGrace: Bool
    /// How long after the failed renewal the charge finally succeeds; nil means never.
    let recoversAfter: Int64?
}

extension ChainScript {
    /// The scripts of the receipt `token` (one per subscription on it), drawn from its seed and index.
    /// Starts lie before the anchor and each twist falls within a few periods of it, so the state at
    /// the anchor varies across a fleet and keeps changing as the clock moves on.
    static func scripts(for token: ReceiptToken, kind: LifecycleKind) -> [ChainScript] {
        var random = SeededRandom(seed: token.seed, index: token.index)
        let time = Durations.of(token.environment)
        let anchor = token.anchorMs
        let month = time.month
        /// A start up to six months before the anchor, at any time of day.
        func start(_ random: inout SeededRandom) -> Int64 {
            anchor - Int64.random(in: 0...5, using: &random) * month - random.offset(in: 0...(month - 1000))
        }
        /// A moment within `months` periods either side of the anchor, after `start`.
        func near(_ months: Double, after start: Int64, _ random: inout SeededRandom) -> Int64 {
            let spread = Int64(Double(month) * months)
            return max(start + Durations.minute, anchor + random.offset(in: -spread...spread))
        }
        func renewalsBeforeAnchor(since start: Int64) -> Int { Int((anchor - start) / month) }

        switch kind {
        case .renewing, .sandbox, .malformed, .deletedAccount, .lifetimePurchase:
            return [ChainScript(plan: Catalog.proMonthly, start: start(&random))]
        case .familyShared:
            return [ChainScript(plan: Catalog.proMonthly, start: start(&random), ownership: .familyShared)]
        case .autoRenewOff:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            script.autoRenewOffAt = near(1.5, after: script.start, &random)
            return [script]
        case .refunded:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            script.refund = (near(1, after: script.start, &random), Int.random(in: 0...1, using: &random))
            return [script]
        case .billingRecovered:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            let renewal = max(1, renewalsBeforeAnchor(since: script.start) + Int.random(in: 0...1, using: &random))
            let retryAfterGrace = (time.billingRetry - time.grace) / 2
            let recovery = time.grace + random.offset(in: (Durations.minute)...retryAfterGrace)
            script.billingFailure = BillingFailure(renewal: renewal, hasGrace: true, recoversAfter: recovery)
            return [script]
        case .billingExpired:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            let renewal = max(1, renewalsBeforeAnchor(since: script.start) + Int.random(in: -1...1, using: &random))
            script.billingFailure = BillingFailure(renewal: renewal, hasGrace: false, recoversAfter: nil)
            return [script]
        case .upgrade:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            script.upgrade = (near(1, after: script.start, &random), Catalog.premiumMonthly)
            return [script]
        case .planChange:
            var script = ChainScript(plan: Catalog.premiumMonthly, start: start(&random))
            let target = Bool.random(using: &random) ? Catalog.proMonthly : Catalog.premiumYearly
            script.planChange = (near(1, after: script.start, &random), target)
            return [script]
        case .trialConversion:
            let begin = anchor - random.offset(in: 0...(time.trial + 2 * month))
            return [ChainScript(plan: Catalog.proMonthly, start: begin, startsWithTrial: true)]
        case .resubscribed:
            let begin = anchor - Int64.random(in: 3...6, using: &random) * month - random.offset(in: 0...month)
            var script = ChainScript(plan: Catalog.proMonthly, start: begin)
            script.autoRenewOffAt = max(begin + Durations.minute, anchor - random.offset(in: (month / 2)...(5 * month / 2)))
            script.resubscribeAfter = random.offset(in: (month / 10)...(3 * month / 2))
            return [script]
        case .refundReversed:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            script.refund = (near(1, after: script.start, &random), Int.random(in: 0...1, using: &random))
            script.refundReversedAfter = random.offset(in: (month / 30)...(month / 6))
            return [script]
        case .renewalExtended:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            script.renewalExtensions = [(near(1, after: script.start, &random), random.offset(in: (month / 30)...(month / 3)))]
            return [script]
        case .priceIncrease:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            let agrees = Bool.random(using: &random) ? random.offset(in: (month / 30)...(month / 10)) : nil
            script.priceIncrease = (near(1, after: script.start, &random), agrees)
            return [script]
        case .lateRefund:
            var script = ChainScript(plan: Catalog.proMonthly, start: anchor - 3 * month - random.offset(in: 0...month))
            script.earlierRefund = (near(1, after: script.start + month, &random), random.offset(in: (month / 30)...(month / 5)))
            return [script]
        case .offerRedeemed:
            var script = ChainScript(plan: Catalog.proMonthly, start: start(&random))
            script.offerRedeemedAt = near(1, after: script.start, &random)
            return [script]
        case .twoGroups:
            let main = ChainScript(chain: 0, plan: Catalog.proMonthly, start: start(&random))
            var addon = ChainScript(chain: 1, plan: Catalog.addonMonthly, start: start(&random))
            addon.autoRenewOffAt = near(1.5, after: addon.start, &random)
            return [main, addon]
        }
    }
}
