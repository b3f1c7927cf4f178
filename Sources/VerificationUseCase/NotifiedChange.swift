import AppStore
import Foundation

/// Whether a V2 notification's signed data tells the whole of the change it announces, so that no
/// call to Apple need confirm it: the Server API would answer with the same transaction and renewal
/// info. It does when the subscription's state is known and the signed transaction continues it
/// with nothing unseen between: a change within the known period (the same transaction: renewal
/// status, refund, extension, billing, expiry), the next period (a renewal or an upgrade, bought
/// before half a period passed after the known one ended), the recovery of a known lapse in
/// billing, or the first period of a resubscription. Anything else (no renewal info, an earlier
/// transaction refunded, periods that went by unannounced) needs Apple's full answer.
public enum NotifiedChange {
    public static func settles(_ signed: VerifyReceiptResponse, known state: SubscriptionState?, type: String, subtype: String?) -> Bool {
        guard let state, !signed.pendingRenewalInfo.isEmpty,
              let latest = signed.latestReceiptInfo.filter({ $0.originalTransactionID == state.originalTransactionID })
                  .max(by: { ($0.purchaseDate, $0.transactionID) < ($1.purchaseDate, $1.transactionID) }),
              let purchased = latest.purchaseDate
        else { return false }
        if latest.transactionID == state.latestTransactionID { return true }
        if type == "SUBSCRIBED", subtype == "RESUBSCRIBE" { return true }
        guard let knownStart = state.purchasedAt, let knownEnd = state.expiresAt, purchased > knownStart else { return false }
        switch state.status {
        case .inBillingRetry, .inGrace:
            return purchased >= knownEnd
        case .active:
            let halfAPeriod = (knownEnd.millisecondsSince1970 - knownStart.millisecondsSince1970) / 2
            return purchased.millisecondsSince1970 <= knownEnd.millisecondsSince1970 + halfAPeriod
        case .expired, .refunded, .invalid:
            return false
        }
    }
}

/// Instants compare as optionals do: a missing one first.
private func < (left: (Instant?, String), right: (Instant?, String)) -> Bool {
    switch (left.0, right.0) {
    case let (a?, b?): (a, left.1) < (b, right.1)
    case (nil, _?): true
    case (_?, nil): false
    case (nil, nil): left.1 < right.1
    }
}
