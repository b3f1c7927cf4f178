import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// A queued registration's claim on a subscription: bounded in number per subscription, and in
/// the calls it may cost however many workers reach it at once.
@Suite struct ClaimTests {
    static func receipt(_ n: Int) -> ReceiptData { ReceiptData(base64: Data("receipt \(n)".utf8).base64EncodedString()) }

    @Test func aSubscriptionHoldsABoundedNumberOfUnjudgedClaims() async throws {
        try await withLedger { ledger, _ in
            let id = try ledger.seed(["7001"])[0].id
            let bound = Ledger.pendingClaimsPerSubscription
            let kept = try (1...bound).map { try ledger.claimSubscription(id, accountID: "acct-\($0)", receipt: Self.receipt($0)) }
            #expect(kept.allSatisfy { $0 == .claimed })
            #expect(try ledger.claimSubscription(id, accountID: "acct-x", receipt: Self.receipt(99)) == .tooManyPending)
            #expect(try ledger.claimSubscription(id, accountID: "acct-1", receipt: Self.receipt(1)) == .claimed,
                    "the same registration again repeats its claim")
            let rows = try ledger.connection.query("SELECT count(*) AS n FROM account_claims")[0]["n"].int64()
            #expect(rows == Int64(bound))

            // Judged, a claim makes room for another.
            try ledger.judgeClaims(of: id, .refuted(receiptSHA256: Self.receipt(1).sha256Hex, reason: "junk", orphan: false))
            #expect(try ledger.claimSubscription(id, accountID: "acct-x", receipt: Self.receipt(99)) == .claimed)
        }
    }

    /// Workers that loaded the claim at once take one call between them; the claim's calls end at
    /// its limit; an unanswered one is given back.
    @Test func aClaimsCallsAreTakenOnceEachAndAnUnansweredOneIsGivenBack() async throws {
        try await withLedger { ledger, _ in
            let id = try ledger.seed(["7002"])[0].id
            let receipt = Self.receipt(1)
            _ = try ledger.claimSubscription(id, accountID: "acct-1", receipt: receipt)
            let digest = receipt.sha256Hex
            func take(seen: Int) throws -> Int? { try ledger.takeClaimAttempt(of: id, receiptSHA256: digest, seen: seen, limit: 3) }
            #expect(try [take(seen: 0), take(seen: 0)] == [1, nil], "one of two workers that loaded it at 0")
            #expect(try [take(seen: 1), take(seen: 2), take(seen: 3)] == [2, 3, nil])

            try ledger.judgeClaims(of: id, .givenBack(receiptSHA256: digest))
            #expect(try take(seen: 2) == 3)
            try ledger.judgeClaims(of: id, .refuted(receiptSHA256: digest, reason: "junk", orphan: false))
            #expect(try take(seen: 0) == nil, "a judged claim costs nothing more")
        }
    }
}
