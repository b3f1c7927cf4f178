import AppStore
import Testing

/// What the fleet tells Apple about a refund request, by what it knows (issue 30, part 3): nothing
/// without consent or for Family Sharing, and a percentage only where Apple takes one.
@Suite struct ConsumptionAnswerTests {
    static func facts(
        _ kind: PurchaseKind?, consented: Bool = true, family: Bool = false, delivered: Bool = true, sample: Bool = false,
        elapsed: Int? = nil
    ) -> ConsumptionFacts {
        ConsumptionFacts(kind: kind, familyShared: family, consented: consented, delivered: delivered, sampleContent: sample, elapsedShare: elapsed)
    }

    static func decided(_ facts: ConsumptionFacts, _ preference: RefundPreference? = nil) -> ConsumptionAnswer? {
        try? ConsumptionAnswer.decide(facts, preference: preference).get()
    }

    @Test func withoutConsentOrForFamilySharingNothingIsSent() {
        #expect(throws: ConsumptionWithheld.noConsent) { try ConsumptionAnswer.decide(Self.facts(.autoRenewable, consented: false), preference: nil).get() }
        #expect(throws: ConsumptionWithheld.familyShared) { try ConsumptionAnswer.decide(Self.facts(.autoRenewable, family: true), preference: nil).get() }
    }

    @Test func anAutoRenewableSubscriptionGetsNoPercentageAppleComputesIt() {
        let answer = Self.decided(Self.facts(.autoRenewable, sample: true), .grantProrated)
        #expect(answer == ConsumptionAnswer(deliveryStatus: .delivered, sampleContentProvided: true, refundPreference: .grantProrated))
        #expect(answer.map { String(decoding: $0.body, as: UTF8.self) }
                == #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":true,"refundPreference":"GRANT_PRORATED"}"#)
        #expect(Self.decided(Self.facts(.autoRenewable, delivered: false))?.deliveryStatus == .undeliveredOther)
    }

    @Test func aOneTimePurchaseGetsAPercentageZeroUnlessDelivered() {
        #expect(Self.decided(Self.facts(.nonConsumable))?.consumptionPercentage == 100_000)
        #expect(Self.decided(Self.facts(.nonConsumable, delivered: false))?.consumptionPercentage == 0)
        #expect(Self.decided(Self.facts(.nonRenewing, elapsed: 25_000))?.consumptionPercentage == 25_000)
        #expect(Self.decided(Self.facts(.consumable))?.consumptionPercentage == nil, "the fleet cannot know a consumable's use")
        #expect(Self.decided(Self.facts(.consumable, delivered: false))?.consumptionPercentage == 0)
    }

    @Test func aProratedGrantWithoutAPercentageAppleTakesLeavesThePreferenceOut() {
        #expect(Self.decided(Self.facts(.nonConsumable), .grantProrated)?.refundPreference == nil, "100000 is not strictly below whole")
        #expect(Self.decided(Self.facts(.nonRenewing, elapsed: 40_000), .grantProrated)?.refundPreference == .grantProrated)
        #expect(Self.decided(Self.facts(.nonConsumable), .decline)?.refundPreference == .decline)
        #expect(RefundPreference(argument: "grant-full") == .grantFull && RefundPreference.grantProrated.argument == "grant-prorated")
    }
}
