import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// Apple's rules for renewal-date extensions as the ledger reads them (`extensionCandidates`,
/// `activeSubscribers`), and the requests it notes: an unanswered one is found again for a retry,
/// and two granted within 365 days are Apple's most.
@Suite struct ExtensionTests {
    static let now = Date()

    /// Sets the columns the rules read.
    static func set(_ ledger: Ledger, _ id: Int64, status: String, expiresIn days: Double = 10, trial: Bool = false,
                    ownership: String = "PURCHASED") throws {
        _ = try ledger.connection.query("""
            UPDATE subscriptions SET status = $2, expires_at = $3, is_trial = $4, ownership = $5, product_id = 'pro.monthly'
            WHERE id = $1
            """, [.int64(id), .text(status), .timestamptz(now.addingTimeInterval(days * 86_400)), .bool(trial), .text(ownership)])
    }

    @Test func theLedgerSaysWhyAppleWouldRefuse() async throws {
        let reasons = try await withLedger { ledger, _ in
            let ids = try ledger.seed((1...8).map { String(9300 + $0) }).map(\.id)
            try Self.set(ledger, ids[0], status: "active")
            try Self.set(ledger, ids[1], status: "in_billing_retry", expiresIn: -1)
            try Self.set(ledger, ids[2], status: "in_grace", expiresIn: -1)
            try Self.set(ledger, ids[3], status: "expired", expiresIn: -1)
            try Self.set(ledger, ids[4], status: "active", expiresIn: -1)
            try Self.set(ledger, ids[5], status: "active", trial: true)
            try Self.set(ledger, ids[6], status: "active", ownership: "FAMILY_SHARED")
            // ids[7] was never verified.
            return try ledger.extensionCandidates(ids: ids, now: Self.now).map(\.ineligible)
        }
        #expect(reasons == [nil, .billingRetry, .grace, .expired, .expired, .freeOffer, .familyShared, .unverified])
    }

    @Test func anUnansweredRequestIsFoundForARetryAndTwoGrantedAreTheMost() async throws {
        try await withLedger { ledger, _ in
            let id = try ledger.seed(["9401"])[0].id
            try Self.set(ledger, id, status: "active")
            try ledger.recordExtensionAsked(subscriptionIDs: [id], requestIdentifier: "r-1", productID: nil, days: 7, reason: .serviceIssue)
            #expect(try ledger.unansweredExtension(subscriptionID: id, productID: nil, days: 7, reason: .serviceIssue) == "r-1")
            #expect(try ledger.unansweredExtension(subscriptionID: id, productID: nil, days: 8, reason: .serviceIssue) == nil)
            #expect(try ledger.unansweredExtension(subscriptionID: nil, productID: "pro.monthly", days: 7, reason: .serviceIssue) == nil,
                    "one subscription's request is not a product's")
            #expect(try ledger.recordExtensionAnswer(requestIdentifier: "r-1", expiresAt: Self.now, refusal: nil) == [id])
            #expect(try ledger.unansweredExtension(subscriptionID: id, productID: nil, days: 7, reason: .serviceIssue) == nil)
            #expect(try ledger.extensionCandidates(ids: [id], now: Self.now)[0].ineligible == nil, "one granted: one more may come")

            try ledger.recordExtensionAsked(subscriptionIDs: [id], requestIdentifier: "r-2", productID: "pro.monthly", days: 3, reason: .other)
            #expect(try ledger.unansweredExtension(subscriptionID: nil, productID: "pro.monthly", days: 3, reason: .other) == "r-2")
            #expect(try ledger.activeSubscribers(ofProduct: "pro.monthly", app: "default", environment: .production, now: Self.now)
                .map(\.id) == [id])
            try ledger.recordExtensionAnswer(requestIdentifier: "r-2", expiresAt: nil, refusal: nil)
            #expect(try ledger.extensionCandidates(ids: [id], now: Self.now)[0].ineligible == .extendedTwice)
        }
    }
}
