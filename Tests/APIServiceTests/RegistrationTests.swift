@testable import APIService
import AppStore
import AppStoreSimulator
import Fleet
import FleetConfiguration
import Foundation
import Ledger
import Logging
import Operations
import Testing
import TestSupport

/// POST /v1/receipts and the reads: a purchase is verified with the simulator at once, stored,
/// and answered with its entitlement; the same receipt again changes nothing twice.
@Suite struct RegistrationTests {
    @Test func aRegisteredReceiptIsVerifiedStoredAndReadable() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt()
            let otid = receipt.subscriptions[0].originalTransactionID
            let registered = try await api.post("/v1/receipts", ["receipt": receipt.receiptData, "account_id": "acct-1"])
            #expect(registered.status == 200, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(registered.json["verification"] as? String == "verified")
            let items = try #require(registered.json["subscriptions"] as? [[String: Any]])
            #expect(items.count == 1)
            #expect(items.first?["account"] as? String == "linked")
            #expect(items.first?["created"] as? Bool == true)
            let subscription = try #require(items.first?["subscription"] as? [String: Any])
            #expect(subscription["original_transaction_id"] as? String == otid)
            #expect(subscription["status"] as? String == "active")
            let entitlement = try #require(subscription["entitlement"] as? [String: Any])
            #expect(entitlement["active"] as? Bool == true)
            #expect(entitlement["until"] as? String == subscription["expires_at"] as? String)
            let id = try #require(subscription["id"] as? Int)

            let detail = try await api.get("/v1/subscriptions/\(id)")
            #expect(detail.status == 200)
            #expect(detail.json["status"] as? String == "active")
            #expect(detail.json["account_id"] as? String == "acct-1")
            let history = try #require(detail.json["history"] as? [String: Any])
            #expect(!((history["transactions"] as? [Any]) ?? []).isEmpty, "the receipt's transactions are stored")

            let byTransaction = try await api.get("/v1/subscriptions?original_transaction_id=\(otid)")
            #expect((byTransaction.json["subscriptions"] as? [[String: Any]])?.map { $0["id"] as? Int } == [id])
            let byAccount = try await api.get("/v1/subscriptions?account_id=acct-1")
            #expect((byAccount.json["subscriptions"] as? [[String: Any]])?.map { $0["id"] as? Int } == [id])
            #expect(try await api.get("/v1/subscriptions/\(id + 1000)").code == "subscription_not_found")

            // The receipt was stored for the fleet, the verification logged, and nothing else was invented.
            #expect(try await api.count("SELECT count(*) AS n FROM receipts") == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM verifications WHERE run_id = 'registration'") == 1)
            #expect(api.counter("receiptfleet_api_registrations_total", [("outcome", "registered")]) == 1)
        }
    }

    @Test func theSameReceiptTwiceUpdatesAndDuplicatesNothing() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt(index: 13)  // two subscription groups on one receipt
            #expect(receipt.subscriptions.count == 2)
            let first = try await api.post("/v1/receipts", ["receipt": receipt.receiptData])
            let transactions = try await api.count("SELECT count(*) AS n FROM transactions")
            let second = try await api.post("/v1/receipts", ["receipt": receipt.receiptData])
            #expect(first.status == 200 && second.status == 200)
            let created = (second.json["subscriptions"] as? [[String: Any]])?.map { $0["created"] as? Bool }
            #expect(created == [false, false])
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 2)
            #expect(try await api.count("SELECT count(*) AS n FROM receipts") == 2)
            #expect(try await api.count("SELECT count(*) AS n FROM transactions") == transactions)
            #expect(try await api.count("SELECT count(*) - count(DISTINCT id) AS n FROM events") == 0)
            #expect(try await api.count("SELECT count(*) AS n FROM verifications") == 4, "each attempt is logged")
        }
    }

    @Test func aReceiptLinkedToAnotherAccountIsReportedNotMoved() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt()
            _ = try await api.post("/v1/receipts", ["receipt": receipt.receiptData, "account_id": "alice"])
            let restore = try await api.post("/v1/receipts", ["receipt": receipt.receiptData, "account_id": "bob"])
            #expect(restore.status == 200)
            let item = try #require((restore.json["subscriptions"] as? [[String: Any]])?.first)
            #expect(item["account"] as? String == "other_account")
            #expect((item["subscription"] as? [String: Any])?["account_id"] as? String == "alice")
            #expect((try await api.get("/v1/subscriptions?account_id=bob").json["subscriptions"] as? [Any])?.isEmpty == true)
            #expect((try await api.get("/v1/subscriptions?account_id=alice").json["subscriptions"] as? [Any])?.count == 1)
        }
    }

    @Test func receiptsAppleRejectsAndBadBodiesGetClearErrors() async throws {
        try await APIHarness.with { api in
            let malformed = api.receipt(index: 11)  // the simulator answers 21002 for it
            let rejected = try await api.post("/v1/receipts", ["receipt": malformed.receiptData])
            #expect(rejected.status == 422)
            #expect(rejected.code == "receipt_rejected")
            #expect(try await api.post("/v1/receipts", ["account_id": "x"]).code == "missing_field")
            #expect(try await api.post("/v1/receipts", ["receipt": "not base64!"]).code == "invalid_receipt")
            #expect(try await api.post("/v1/receipts", bytes: Array("[1,2".utf8)).code == "invalid_json")
            // Foundation would take one of the two silently: which one the caller meant is not known.
            let twice = try await api.post("/v1/receipts", bytes: Array(#"{"receipt": "AAAA", "receipt": "BBBB"}"#.utf8))
            #expect(twice.status == 400 && twice.code == "invalid_json", "\(twice.json)")
            let notification = try await api.post(
                APIHarness.notificationPath, bytes: Array(#"{"signedPayload": "a.b.c", "signedPayload": "d.e.f"}"#.utf8), auth: .none)
            #expect(notification.status == 400 && notification.code == "invalid_notification", "\(notification.json)")
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 0)
        }
    }

    /// PostgreSQL refuses a NUL in text, and an index row of kilobytes: an id holding a control
    /// character, or longer than 256 bytes, is refused with 400 before Apple is asked or anything is
    /// stored, on every route that takes an id.
    @Test func anIDWithAControlCharacterIsRefusedBeforeAnythingIsAskedOrStored() async throws {
        try await APIHarness.with(serverAPI: true) { api in
            let receipt = try await api.post("/v1/receipts", ["receipt": api.receipt().receiptData, "account_id": "a\u{0}b"])
            #expect(receipt.status == 400 && receipt.code == "invalid_account_id", "\(receipt.json)")
            let transaction = try await api.post("/v1/transactions", ["transaction_id": "1000000000000001", "account_id": "a\u{7}b"])
            #expect(transaction.status == 400 && transaction.code == "invalid_account_id", "\(transaction.json)")
            #expect(try await api.get("/v1/subscriptions?account_id=a%00b").code == "invalid_account_id")
            #expect(try await api.get("/v1/purchases?transaction_id=%00").code == "invalid_transaction_id")
            let deletion = try await api.delete("/v1/accounts/a%00b")
            #expect(deletion.status == 400 && deletion.code == "invalid_account_id", "\(deletion.json)")
            // One character of 12 KB ("a" and 6,000 combining marks): the limit is in bytes.
            let long = "a" + String(repeating: "\u{0301}", count: 6_000)
            let marks = try await api.post("/v1/receipts", ["receipt": api.receipt().receiptData, "account_id": long])
            #expect(marks.status == 400 && marks.code == "invalid_account_id", "\(marks.json)")
            let consent = try await api.put("/v1/accounts/" + (long.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + "/refund-consent")
            #expect(consent.status == 400 && consent.code == "invalid_account_id", "\(consent.json)")
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions") == 0)
        }
    }

    /// A handshake broken off usually passes: Apple is unavailable for now, not misconfigured, and
    /// one such answer halts nothing (every call failing so for long does; see TransportFaultTests).
    @Test func aBrokenTLSHandshakeIsAppleUnavailableNotAMisconfiguration() async throws {
        let https = { (url: String) in url.replacingOccurrences(of: "http://", with: "https://") }
        let toPlainPort = { (fleet: inout FleetSettings) in
            fleet.endpoints = AppStoreEndpoints(production: https(fleet.endpoints.production), sandbox: https(fleet.endpoints.sandbox))
        }
        try await APIHarness.with(configureFleet: toPlainPort) { api in
            let reply = try await api.post("/v1/receipts", ["receipt": api.receipt().receiptData])
            #expect(reply.status == 503)
            #expect(reply.code == "apple_unavailable", "\(reply.json)")
            let fleet = api.fleet
            #expect(try await onOwnThread { try FleetStatus.read(settings: fleet) }.queue.haltedReason == nil)
        }
    }
}

/// When Apple cannot be asked, a registration that names its original_transaction_id is stored
/// and queued at high priority; one that does not is told to come back.
@Suite struct PendingRegistrationTests {
    /// A customer who bought an hour ago is a new purchase, announced; one whose chain began months
    /// ago is restoring on a new device, a silent baseline.
    @Test func aPurchaseMadeAnHourAgoIsAnInitialPurchaseAndARestoreIsNot() async throws {
        try await APIHarness.with { api in
            let nowMs = api.simulator.store.clock.nowMs
            let restore = try #require((7...20).lazy.map { api.receipt(seed: $0) }.first { receipt in
                Self.firstPurchaseMs(of: receipt.subscriptions[0], before: nowMs) < nowMs - 2 * 86_400_000
            })
            #expect(try await api.post("/v1/receipts", ["receipt": restore.receiptData]).status == 200)
            #expect(try await api.count("SELECT count(*) AS n FROM events") == 0)

            // Apple's clock an hour after a new customer's purchase.
            let fresh = api.receipt(seed: 99)
            api.simulator.store.clock.set(nowMs: Self.firstPurchaseMs(of: fresh.subscriptions[0], before: nowMs) + 3_600_000)
            #expect(try await api.post("/v1/receipts", ["receipt": fresh.receiptData]).status == 200)
            let types = try await api.count("SELECT count(*) AS n FROM events WHERE type = 'initial_purchase'")
            #expect(types == 1)
            #expect(try await api.count("SELECT count(*) AS n FROM events") == 1)
        }
    }

    /// When the subscription was first bought: the first moment its truth is no longer `invalid`
    /// (not bought yet), found by halving a year before `beforeMs`.
    static func firstPurchaseMs(of subscription: SimulatedSubscription, before beforeMs: Int64) -> Int64 {
        var (low, high) = (beforeMs - 400 * 86_400_000, beforeMs)
        while high - low > 1_000 {
            let middle = (low + high) / 2
            if subscription.groundTruth(at: middle).status == .invalid { low = middle } else { high = middle }
        }
        return high
    }

    @Test func aHaltedFleetQueuesARegistrationThatNamesItsSubscription() async throws {
        try await APIHarness.with { api in
            try await api.haltFleet()
            let receipt = api.receipt()
            let otid = receipt.subscriptions[0].originalTransactionID
            let refused = try await api.post("/v1/receipts", ["receipt": receipt.receiptData])
            #expect(refused.status == 503)
            #expect(refused.code == "fleet_halted")
            #expect(refused.headers["Retry-After"] != nil)

            let queued = try await api.post("/v1/receipts", [
                "receipt": receipt.receiptData, "original_transaction_id": otid, "account_id": "acct-9",
            ])
            #expect(queued.status == 202)
            #expect(queued.json["verification"] as? String == "pending")
            let item = try #require((queued.json["subscriptions"] as? [[String: Any]])?.first)
            #expect((item["subscription"] as? [String: Any])?["status"] as? String == "pending")
            #expect(item["account"] as? String == "pending", "a claim; Apple has not shown the receipt holds it")
            #expect(try await api.streamLength(\.readyHigh) == 1, "a registration job, ahead of the nightly backlog")
            #expect(try await api.count("SELECT count(*) AS n FROM verifications") == 0, "Apple was not asked")
        }
    }

    /// While Apple cannot be asked, anyone can name any original_transaction_id: mallory's junk
    /// receipt naming alice's subscription links nothing and grants nothing; alice's genuine
    /// registration links it once Apple answers.
    @Test func aQueuedClaimWithAJunkReceiptLinksNothing() async throws {
        try await APIHarness.with { api in
            let genuine = api.receipt()
            let otid = genuine.subscriptions[0].originalTransactionID
            try await api.haltFleet()
            let junk = try await api.post("/v1/receipts", [
                "receipt": "bm90IGEgcmVjZWlwdA==", "original_transaction_id": otid, "account_id": "mallory",
            ])
            #expect(junk.status == 202)
            let item = try #require((junk.json["subscriptions"] as? [[String: Any]])?.first)
            #expect(item["account"] as? String == "pending")
            let entitlement = (item["subscription"] as? [String: Any])?["entitlement"] as? [String: Any]
            #expect(entitlement?["active"] as? Bool == false)
            #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE account_id IS NOT NULL") == 0)
            let pending = try await api.get("/v1/subscriptions?account_id=mallory")
            #expect((pending.json["subscriptions"] as? [[String: Any]])?.map { $0["status"] as? String } == ["pending"])

            try await api.resumeFleet()
            try await RunningServices.worker(settings: api.fleet, logger: Logger(label: "api-test-worker")).whileRunning {
                // The worker has Apple judge the junk receipt the claim kept: refused, nothing is linked.
                let judged = "SELECT count(*) AS n FROM account_claims WHERE refuted IS NOT NULL"
                try await eventually(every: .milliseconds(200)) { try await api.count(judged) > 0 }
                #expect(try await api.count(judged) == 1)
                #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE account_id IS NOT NULL") == 0)
                let listed = try await api.get("/v1/subscriptions?account_id=mallory")
                #expect((listed.json["subscriptions"] as? [[String: Any]])?.isEmpty == true, "mallory's claim is refused")

                let alice = try await api.post("/v1/receipts", ["receipt": genuine.receiptData, "account_id": "alice"])
                #expect(alice.status == 200)
                #expect((alice.json["subscriptions"] as? [[String: Any]])?.first?["account"] as? String == "linked")
                #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE account_id = 'alice'") == 1)
                #expect(try await api.count("SELECT count(*) AS n FROM subscriptions WHERE account_id = 'mallory'") == 0)
            }
        }
    }

    /// While Apple cannot be asked, a stranger queues junk naming a new customer's subscription
    /// first, with no account; the owner's own registration, queued next, is judged on its own
    /// receipt: the owner is linked and the subscription active, never invalid, and the stored
    /// receipt is Apple's, not the junk.
    @Test func aQueuedRegistrationCannotBeSquattedByJunkQueuedFirst() async throws {
        try await APIHarness.with { api in
            let genuine = api.receipt()
            let otid = genuine.subscriptions[0].originalTransactionID
            try await api.haltFleet()
            let junk = try await api.post("/v1/receipts", ["receipt": "bm90IGEgcmVjZWlwdA==", "original_transaction_id": otid])
            #expect(junk.status == 202)
            let owner = try await api.post("/v1/receipts", [
                "receipt": genuine.receiptData, "original_transaction_id": otid, "account_id": "alice",
            ])
            #expect(owner.status == 202)
            #expect(try await api.count("SELECT count(*) AS n FROM receipts") == 0, "no queued receipt is the subscription's yet")

            try await api.resumeFleet()
            try await RunningServices.worker(settings: api.fleet, logger: Logger(label: "api-test-worker")).whileRunning {
                // Both judged: the junk after three 21002s, as any receipt Apple cannot read.
                let linked = "SELECT count(*) AS n FROM subscriptions WHERE account_id = 'alice'"
                let waiting = "SELECT count(*) AS n FROM account_claims WHERE resolved_at IS NULL"
                try await eventually(within: .seconds(40), every: .milliseconds(200)) {
                    let (linkedCount, waitingCount) = (try await api.count(linked), try await api.count(waiting))
                    return linkedCount == 1 && waitingCount == 0
                }
                #expect(try await api.count(linked) == 1)
                let listed = try await api.get("/v1/subscriptions?account_id=alice")
                #expect((listed.json["subscriptions"] as? [[String: Any]])?.map { $0["status"] as? String } == ["active"])
                #expect(try await api.count("SELECT count(*) AS n FROM receipts WHERE receipt = 'bm90IGEgcmVjZWlwdA=='") == 0)
                #expect(try await api.count("SELECT count(*) AS n FROM receipts") == 1)
                #expect(try await api.count("SELECT count(*) AS n FROM account_claims WHERE resolved_at IS NULL") == 0)
                #expect(try await api.count("SELECT count(*) AS n FROM account_claims WHERE refuted IS NOT NULL") == 1)
            }
        }
    }

    /// Strangers queue registrations naming one subscription while Apple cannot be asked, each
    /// with another subscription's receipt and an account of their own: five are kept and the
    /// sixth is refused with nothing kept; once Apple answers, each kept one costs one call (the
    /// answer does not show the subscription) and no dead letter is left behind.
    @Test func claimsOnOneSubscriptionAreBoundedAndEachCostsItsOwnCalls() async throws {
        try await APIHarness.with { api in
            let otid = api.receipt().subscriptions[0].originalTransactionID
            try await api.haltFleet()
            var answers: [APIHarness.Reply] = []
            for stranger in 1...Ledger.pendingClaimsPerSubscription + 1 {
                answers.append(try await api.post("/v1/receipts", [
                    "receipt": api.receipt(index: stranger).receiptData, "original_transaction_id": otid,
                    "account_id": "stranger-\(stranger)",
                ]))
            }
            #expect(answers.map(\.status) == Array(repeating: 202, count: Ledger.pendingClaimsPerSubscription) + [503])
            #expect(answers.last?.code == "too_many_pending_claims")
            #expect(answers.last?.headers["Retry-After"] != nil)
            #expect(try await api.count("SELECT count(*) AS n FROM account_claims") == Ledger.pendingClaimsPerSubscription)

            let answeredBefore = api.simulator.store.statistics.byStatus["0", default: 0]
            try await api.resumeFleet()
            _ = try await RunningServices.worker(settings: api.fleet, logger: Logger(label: "api-test-worker")).whileRunning {
                try await eventually(within: .seconds(30), every: .milliseconds(200)) {
                    let waiting = try await api.count("SELECT count(*) AS n FROM account_claims WHERE resolved_at IS NULL")
                    let outstanding = try await api.jobs().outstanding
                    return waiting == 0 && outstanding == 0
                }
            }
            // Each judged by an answer, and none asked about more than three times (usually once: a job that loads a
            // claim while another's call for it is in flight may ask again).
            let statistics = api.simulator.store.statistics
            let answered = statistics.byStatus["0", default: 0] - answeredBefore
            #expect(answered >= Ledger.pendingClaimsPerSubscription && answered <= 3 * Ledger.pendingClaimsPerSubscription, "\(statistics)")
            #expect(try await api.count("SELECT count(*) AS n FROM account_claims WHERE refuted IS NOT NULL")
                    == Ledger.pendingClaimsPerSubscription)
            #expect(try await api.jobs().dead == 0, "refused claims leave no dead letter")
        }
    }

    /// A receipt longer than any real one is refused before anything is asked or kept.
    @Test func aReceiptOverTheBoundIsRefusedBeforeAnythingIsAskedOrKept() throws {
        func code(_ receipt: String) -> String? {
            do {
                _ = try RegistrationRequest(receipt: receipt, originalTransactionID: "1000000000000042").validated()
                return nil
            } catch {
                return error.code
            }
        }
        let bound = RegistrationRequest.maxReceiptCharacters
        #expect(code(String(repeating: "QUJD", count: bound / 4)) == nil)
        #expect(code(String(repeating: "QUJD", count: bound / 4) + "\nQUJD") == "receipt_too_large")
        #expect(code(String(repeating: "QUJD\n", count: bound / 4)) == nil, "line breaks are not counted")
    }

    /// A genuine receipt queued while Apple could not be asked: once a worker's check shows it
    /// holds the subscription, the claim is proven and the account linked.
    @Test func aQueuedClaimIsLinkedOnceAppleShowsItsReceipt() async throws {
        try await APIHarness.with { api in
            let receipt = api.receipt()
            let otid = receipt.subscriptions[0].originalTransactionID
            try await api.haltFleet()
            let queued = try await api.post("/v1/receipts", [
                "receipt": receipt.receiptData, "original_transaction_id": otid, "account_id": "alice",
            ])
            #expect(queued.status == 202)
            try await api.resumeFleet()
            try await RunningServices.worker(settings: api.fleet, logger: Logger(label: "api-test-worker")).whileRunning {
                let linked = "SELECT count(*) AS n FROM subscriptions WHERE account_id = 'alice'"
                try await eventually(every: .milliseconds(200)) { try await api.count(linked) > 0 }
                #expect(try await api.count(linked) == 1)
                let listed = try await api.get("/v1/subscriptions?account_id=alice")
                #expect((listed.json["subscriptions"] as? [[String: Any]])?.map { $0["status"] as? String } == ["active"])
            }
        }
    }
}
