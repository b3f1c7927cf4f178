import AppStore
import Foundation
import Testing

/// Changes a verification finds that are not a new period: a refund taken back, a lapse and a new
/// purchase between two looks, an extended renewal date, a refund of an earlier period seen late,
/// a price increase's consent, and a brand-new purchase seen at registration.
@Suite struct LateNewsTests {
    typealias S = Scenario
    static let day: TimeInterval = 86_400
    let january = Entry(transactionID: "1001", purchased: S.day(1, 1), expires: S.day(2, 1))
    let february = Entry(transactionID: "1002", purchased: S.day(2, 1), expires: S.day(3, 1))

    @Test func aRefundAppleReversesMakesTheSubscriptionActiveAgain() throws {
        var refunded = february
        (refunded.cancelled, refunded.cancellationReason) = (S.day(2, 5), 0)
        let stored = try S.stored([january, refunded], at: S.day(2, 6))
        #expect(stored.status == .refunded)
        let analysis = try S.analyze(stored: stored, S.response([january, february]), at: S.day(2, 9))
        #expect(analysis.events.map(\.type) == [.refundReversed])
        #expect(analysis.events.first?["transaction_id"] == .string("1002"))
        #expect(analysis.events.first?.occurredAt == S.day(2, 9), "Apple gives no date: the verification's")
        #expect(analysis.state.status == .active)
        #expect(analysis.state.cancellation == nil)
        #expect(analysis.state.refundedTransactionIDs == [])
    }

    @Test func aLapseAndANewPurchaseBetweenTwoLooksIsAnExpiryAndAResubscription() throws {
        let stored = try S.stored([january], renewals: [Renewal(autoRenew: false)], at: S.day(1, 15))
        let comeback = Entry(transactionID: "1005", purchased: S.day(2, 20), expires: S.day(3, 20))
        let analysis = try S.analyze(stored: stored, S.response([january, comeback]), at: S.day(2, 25))
        // The new chain renews automatically again: switched on since the stored look.
        #expect(analysis.events.map(\.type) == [.expired, .resubscribed, .autoRenewEnabled])
        #expect(analysis.events[0].occurredAt == S.day(2, 1))
        #expect(analysis.events[0]["transaction_id"] == .string("1001"))
        #expect(analysis.events[0]["expiration_intent"] == .integer(1))
        #expect(analysis.events[1].occurredAt == S.day(2, 20))
        #expect(analysis.state.chainStartedAt == S.day(2, 20))
        #expect(analysis.state.status == .active)

        // The same expiry seen at the time has the same id: a consumer that saw it then ignores it now.
        let seenExpired = try S.analyze(
            stored: stored, S.response([january], renewals: [Renewal(autoRenew: false, expirationIntent: 1)]), at: S.day(2, 3))
        #expect(seenExpired.events.filter { $0.type == .expired }.map(\.id) == [analysis.events[0].id])
    }

    @Test func aRenewalOnTimeIsNotALapse() throws {
        let stored = try S.stored([january], renewals: [Renewal(autoRenew: false)], at: S.day(1, 15))
        // Switched back on before the period ended: the renewal is bought as it ends.
        let analysis = try S.analyze(stored: stored, S.response([january, february]), at: S.day(2, 10))
        #expect(analysis.events.map(\.type) == [.renewed, .autoRenewEnabled])
    }

    @Test func anExtendedRenewalDateIsAnnouncedWithBothDates() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        var extended = january
        extended.expires = S.day(2, 11)
        let analysis = try S.analyze(stored: stored, S.response([extended]), at: S.day(1, 20))
        #expect(analysis.events.map(\.type) == [.renewalExtended])
        #expect(analysis.events.first?["previous_expires_at"] == .string("2024-02-01T00:00:00.000Z"))
        #expect(analysis.events.first?["expires_at"] == .string("2024-02-11T00:00:00.000Z"))
        #expect(analysis.state.expiresAt == S.day(2, 11))
    }

    /// Cancelled on 10 February, verified on the 11th without it showing, seen on the 12th.
    @Test func aRefundOfAnEarlierPeriodSeenLateIsStillAnnounced() throws {
        let stored = try S.stored([january, february], at: S.day(2, 11))
        var refundedJanuary = january
        (refundedJanuary.cancelled, refundedJanuary.cancellationReason) = (S.day(2, 10), 1)
        let analysis = try S.analyze(stored: stored, S.response([refundedJanuary, february]), at: S.day(2, 12))
        #expect(analysis.events.map(\.type) == [.refunded])
        #expect(analysis.events.first?["transaction_id"] == .string("1001"))
        #expect(analysis.events.first?.occurredAt == S.day(2, 10))
        #expect(analysis.state.status == .active, "the current period is paid")
        #expect(analysis.state.refundedTransactionIDs == ["1001"])
    }

    /// States stored before `refunded_transaction_ids` existed (the old shape: the list nil) hold
    /// only their latest transaction's refund. An earlier period's refund dated before the stored
    /// check may not have been seen then: it is announced, under the id it had when first seen,
    /// which the ledger keeps once.
    @Test func aStateStoredBeforeRefundsWereListedStillAnnouncesARefundSeenLateUnderItsFirstID() throws {
        var refundedJanuary = january
        (refundedJanuary.cancelled, refundedJanuary.cancellationReason) = (S.day(1, 20), 1)
        var legacy = try S.stored([january, february], at: S.day(2, 5))
        legacy.refundedTransactionIDs = nil
        let analysis = try S.analyze(stored: legacy, S.response([refundedJanuary, february]), at: S.day(2, 8))
        #expect(analysis.events.map(\.type) == [.refunded])
        #expect(analysis.state.refundedTransactionIDs == ["1001"])
        // Seen when it happened, by a state of today's shape: the same event id.
        let seenThen = try S.analyze(stored: try S.stored([january, february], at: S.day(1, 15)),
                                     S.response([refundedJanuary, february]), at: S.day(1, 21))
        #expect(seenThen.events.filter { $0.type == .refunded }.map(\.id) == analysis.events.map(\.id))
    }

    /// A state of the old shape whose latest transaction was refunded: Apple reversing the refund
    /// is announced, though the new answer no longer shows the cancellation.
    @Test func aReversalIsSeenOnAStateStoredBeforeRefundsWereListed() throws {
        var refunded = february
        (refunded.cancelled, refunded.cancellationReason) = (S.day(2, 5), 0)
        var legacy = try S.stored([january, refunded], at: S.day(2, 6))
        legacy.refundedTransactionIDs = nil
        #expect(legacy.status == .refunded)
        let analysis = try S.analyze(stored: legacy, S.response([january, february]), at: S.day(2, 9))
        #expect(analysis.events.map(\.type) == [.refundReversed])
        #expect(analysis.events.first?["transaction_id"] == .string("1002"))
        #expect(analysis.state.status == .active)
    }

    /// A family member's access taken back is a revocation, not "an accidental purchase".
    @Test func aFamilySharedRevocationIsNamedSo() throws {
        var shared = february
        shared.ownership = "FAMILY_SHARED"
        let stored = try S.stored([january, shared], at: S.day(2, 3))
        var revoked = shared
        (revoked.cancelled, revoked.cancellationReason) = (S.day(2, 4), 0)
        let analysis = try S.analyze(stored: stored, S.response([january, revoked]), at: S.day(2, 5))
        let meaning = analysis.events.first { $0.type == .refunded }?["cancellation_reason_meaning"]
        #expect(meaning.map { "\($0)".contains("revoked: Family Sharing") } == true, "\(String(describing: meaning))")
    }

    @Test func priceIncreaseConsentPendingThenAgreedOrDeclined() throws {
        let stored = try S.stored([january], at: S.day(1, 10))
        var asked = Renewal()
        asked.priceConsentStatus = 0
        let pending = try S.analyze(stored: stored, S.response([january], renewals: [asked]), at: S.day(1, 12))
        #expect(pending.events.map(\.type) == [.priceIncreaseConsent])
        #expect(pending.events.first?["consent"] == .string("pending"))

        var agreedRenewal = asked
        agreedRenewal.priceConsentStatus = 1
        let agreed = try S.analyze(stored: pending.state, S.response([january], renewals: [agreedRenewal]), at: S.day(1, 14))
        #expect(agreed.events.map { $0["consent"] } == [.string("agreed")])

        let declinedRenewal = Renewal(autoRenew: false, expirationIntent: 3)
        let declined = try S.analyze(stored: pending.state, S.response([january], renewals: [declinedRenewal]), at: S.day(2, 2))
        #expect(declined.events.filter { $0.type == .priceIncreaseConsent }.map { $0["consent"] } == [.string("declined")])
        #expect(declined.state.status == .expired)
    }

    /// An offer code redeemed for the next renewal is announced once, when the renewal info first
    /// names it (the example in docs/events.md), and the period bought with it carries it.
    @Test func anOfferCodeRedeemedIsAnnouncedOnceAndItsPeriodCarriesIt() throws {
        let stored = try S.stored([january], at: S.day(1, 10))
        var redeemed = Renewal()
        redeemed.offerCodeRefName = "WELCOME_BACK_HALF_PRICE"
        let announced = try S.analyze(stored: stored, S.response([january], renewals: [redeemed]), at: S.day(1, 12))
        #expect(announced.events.map(\.type) == [.offerRedeemed])
        #expect(announced.events.first?["offer_type"] == .string("offer_code"))
        #expect(announced.events.first?["offer_identifier"] == .string("WELCOME_BACK_HALF_PRICE"))
        #expect(announced.events.first?["effective_at"] == .string("2024-02-01T00:00:00.000Z"))
        #expect(announced.events.first?.id == "719a16f9-dacd-8321-90e1-45ff8109c9d4")

        let again = try S.analyze(stored: announced.state, S.response([january], renewals: [redeemed]), at: S.day(1, 14))
        #expect(again.events.isEmpty, "the same offer still pending is no news")

        var bought = february
        bought.offerCodeRefName = "WELCOME_BACK_HALF_PRICE"
        let renewed = try S.analyze(stored: again.state, S.response([january, bought]), at: S.day(2, 2))
        #expect(renewed.events.map(\.type) == [.renewed])
        #expect(renewed.events.first?["offer_code_ref_name"] == .string("WELCOME_BACK_HALF_PRICE"))
    }

    @Test func aChainBegunMomentsBeforeARegistrationIsAnInitialPurchase() throws {
        var trial = Entry(transactionID: "1001", purchased: S.day(1, 1, hour: 9), expires: S.day(1, 8, hour: 9))
        trial.isTrial = true
        let response = try S.response([trial], answeredAt: S.day(1, 1, hour: 10))
        let fresh = try SubscriptionAnalyzer.analyze(
            stored: nil, response: response, originalTransactionID: S.subscription, now: Date(),
            announcingPurchasesWithin: Self.day)
        #expect(fresh.events.map(\.type) == [.initialPurchase])
        #expect(fresh.events.first?.occurredAt == S.day(1, 1, hour: 9))
        #expect(fresh.events.first?["is_trial"] == .bool(true))
        #expect(fresh.events.first?["transaction_id"] == .string("1001"))

        // A restore of an older chain, or a nightly first sight, stays a silent baseline.
        let restored = try SubscriptionAnalyzer.analyze(
            stored: nil, response: S.response([trial], answeredAt: S.day(1, 3)), originalTransactionID: S.subscription,
            now: Date(), announcingPurchasesWithin: Self.day)
        #expect(restored.events.isEmpty)
        let nightly = try SubscriptionAnalyzer.analyze(
            stored: nil, response: response, originalTransactionID: S.subscription, now: Date())
        #expect(nightly.events.isEmpty)
    }

    @Test func everyEventSaysWhereItCameFromAndWhatOfferItIsOn() throws {
        let stored = try S.stored([january], at: S.day(1, 15))
        var offered = february
        offered.offerCodeRefName = "SPRING"
        offered.groupID = "20537620"
        offered.ownership = "FAMILY_SHARED"
        let analysis = try S.analyze(stored: stored, S.response([january, offered]), at: S.day(2, 10))
        let event = try #require(analysis.events.first)
        #expect(event["environment"] == .string("Production"))
        #expect(event["ownership"] == .string("FAMILY_SHARED"))
        #expect(event["subscription_group_identifier"] == .string("20537620"))
        #expect(event["offer_code_ref_name"] == .string("SPRING"))
        #expect(event["promotional_offer_id"] == .null)
        #expect(event["is_trial"] == .bool(false))
        #expect(event["is_intro_offer"] == .bool(false))
    }
}
