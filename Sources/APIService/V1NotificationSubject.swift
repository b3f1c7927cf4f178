import AppStore
import Foundation

/// Which subscription a V1 notification is about.
///
/// A customer with subscriptions in several subscription groups has all of them in
/// `unified_receipt.latest_receipt_info`, so the latest expiry there may be another group's: a
/// notification about group B would re-verify group A, and B's change would wait for the nightly
/// run. The notification's own pointers are asked first, the most direct first:
/// 1. the top-level `original_transaction_id` (not in every body);
/// 2. the one transaction pre-2021 bodies carry at the top level: `latest_receipt_info`, or
///    `latest_expired_receipt_info` once it has expired (a CANCEL of that era carries only this);
/// 3. the `unified_receipt.pending_renewal_info` entry (one per group) that renews into the
///    notification's `auto_renew_product_id`, or else whose product it is;
/// 4. the unified receipt's latest transaction of that product;
///
/// and only when none of them answers, the latest expiry of all. (Apple writes ids as strings, but a
/// body re-serialized on its way may carry them as numbers: `text` reads both.)
enum V1NotificationSubject {
    static func originalTransactionID(in body: [String: JSONValue], unifiedReceipt: VerifyReceiptResponse?) -> String? {
        if let id = body.text("original_transaction_id") { return id }
        for key in ["latest_receipt_info", "latest_expired_receipt_info"] {
            if let id = body[key]?.members?.text("original_transaction_id") { return id }
        }
        let transactions = unifiedReceipt?.latestReceiptInfo ?? []
        if let product = body.text("auto_renew_product_id") {
            let renewals = unifiedReceipt?.pendingRenewalInfo ?? []
            let renewal = renewals.first { $0.autoRenewProductID == product } ?? renewals.first { $0.productID == product }
            if let id = renewal?.originalTransactionID { return id }
            if let id = latestExpiring(transactions.filter { $0.productID == product })?.originalTransactionID { return id }
        }
        return latestExpiring(transactions)?.originalTransactionID
    }

    private static func latestExpiring(_ transactions: [ReceiptTransaction]) -> ReceiptTransaction? {
        transactions.max { ($0.expiresDate?.millisecondsSince1970 ?? 0) < ($1.expiresDate?.millisecondsSince1970 ?? 0) }
    }
}
