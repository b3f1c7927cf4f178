@testable import AppStoreSimulator
import Foundation
import TestSupport
import Testing

/// The simulator announces like Apple: a V2 notification for every change its own truth counts,
/// of the type and subtype Apple sends, and none where nothing changed.
@Suite struct AnnouncementTests {
    /// The truth is read in steps of four hours: a step holding a change holds its notification.
    static let step: Int64 = 4 * 3_600_000

    /// Each subscription of every lifecycle kind, looked at every four hours for 120 days around the
    /// anchor: a step in which the truth (`expectedEvents`, an independent reading of two answers)
    /// has a change holds a notification, and a step without one holds none. (The first purchase
    /// is announced too, but the truth counts it as the baseline, not as a change.)
    @Test func everyChangeTheTruthCountsIsAnnouncedAndNothingElse() async throws {
        // On a thread of its own: a few seconds of timelines would hold one of Swift's two pool threads.
        let (announcedTypes, mismatch) = try await onOwnThread { Self.announcedTypesAndFirstMismatch() }
        #expect(mismatch == nil, "\(mismatch ?? "")")
        for type in ["SUBSCRIBED.INITIAL_BUY", "SUBSCRIBED.RESUBSCRIBE", "CONSUMPTION_REQUEST", "DID_RENEW", "DID_RENEW.BILLING_RECOVERY",
                     "DID_FAIL_TO_RENEW", "DID_FAIL_TO_RENEW.GRACE_PERIOD", "GRACE_PERIOD_EXPIRED", "DID_CHANGE_RENEWAL_STATUS.AUTO_RENEW_DISABLED", "DID_CHANGE_RENEWAL_PREF.UPGRADE",
                     "DID_CHANGE_RENEWAL_PREF.DOWNGRADE", "PRICE_INCREASE.PENDING", "EXPIRED.VOLUNTARY", "EXPIRED.PRICE_INCREASE",
                     "REFUND", "REFUND_REVERSED", "RENEWAL_EXTENDED", "OFFER_REDEEMED"] {
            #expect(announcedTypes.contains(type), "no \(type) among \(announcedTypes.sorted())")
        }
    }

    /// Every type announced, and the first step where the truth and the announcements disagree.
    static func announcedTypesAndFirstMismatch() -> (Set<String>, String?) {
        let (start, end) = (anchorMs - 60 * day, anchorMs + 60 * day)
        var announcedTypes: Set<String> = []
        for kind in LifecycleKind.allCases where kind.environment == .production {
            for round in 0..<2 {
                let receipt = receipt(kind, round: round)
                let all = receipt.notifications(from: start, until: end)
                announcedTypes.formUnion(all.map { $0.type + ($0.subtype.map { ".\($0)" } ?? "") })
                let notifications = all.filter { $0.type != "CONSUMPTION_REQUEST" && $0.subtype != "INITIAL_BUY" }
                for subscription in receipt.subscriptions {
                    let id = subscription.originalTransactionID
                    let own = notifications.filter { String($0.transaction.originalTransactionID) == id }
                    var from = start
                    while from < end {
                        let changed = !subscription.expectedEvents(since: from, at: Look(at: from + Self.step, seesWholeHistory: true)).isEmpty
                        let announced = own.contains { $0.signedDateMs > from && $0.signedDateMs <= from + Self.step }
                        if changed != announced {
                            return (announcedTypes, "\(kind) round \(round), step ending \(from + Self.step): changed \(changed), announced \(announced)")
                        }
                        from += Self.step
                    }
                }
            }
        }
        return (announcedTypes, nil)
    }

    /// A customer's refund request is announced before Apple decides it: the transaction Apple
    /// signs into the CONSUMPTION_REQUEST is not refunded yet, and the REFUND follows hours later.
    @Test func aConsumptionRequestCarriesTheTransactionBeforeItsRefund() {
        var requests = 0
        for round in 0..<4 {
            let all = receipt(.refunded, round: round).notifications(from: anchorMs - 60 * day, until: anchorMs + 60 * day)
            for request in all where request.type == "CONSUMPTION_REQUEST" {
                requests += 1
                #expect(request.transaction.cancellationMs == nil, "refunded at \(request.transaction.cancellationMs ?? 0), asked at \(request.signedDateMs)")
                let refund = all.first { $0.type == "REFUND" && $0.transaction.transactionID == request.transaction.transactionID }
                #expect(refund.map { $0.signedDateMs > request.signedDateMs } == true, "its REFUND comes after it")
            }
        }
        #expect(requests > 0)
    }

    /// A lapse in billing reads as Apple tells it: the failed renewal with its grace period, the
    /// grace period's end, and then the recovery; or the failed renewal and, when billing retry
    /// gives up, the expiry for that reason.
    @Test func aBillingLapseIsToldStepByStep() throws {
        func told(_ kind: LifecycleKind) -> [String] {
            receipt(kind).notifications(from: anchorMs - 200 * day, until: anchorMs + 200 * day)
                .sorted { $0.signedDateMs < $1.signedDateMs }.map { $0.type + ($0.subtype.map { ".\($0)" } ?? "") }
        }
        let recovered = told(.billingRecovered)
        #expect(recovered.first == "SUBSCRIBED.INITIAL_BUY")
        let lapse = try #require(recovered.firstIndex(of: "DID_FAIL_TO_RENEW.GRACE_PERIOD"), "\(recovered)")
        #expect(Array(recovered[lapse...].prefix(3)) == ["DID_FAIL_TO_RENEW.GRACE_PERIOD", "GRACE_PERIOD_EXPIRED", "DID_RENEW.BILLING_RECOVERY"])
        let lost = told(.billingExpired)
        #expect(Array(lost.suffix(2)) == ["DID_FAIL_TO_RENEW", "EXPIRED.BILLING_RETRY"], "\(lost)")
    }
}
