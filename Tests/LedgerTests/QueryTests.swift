import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// The queries the fleet reads with: import, due pages, loads, the detail view, the counts.
@Suite struct QueryTests {
    typealias S = Scenario

    static func new(_ id: String, receipt: String, environment: AppStoreEnvironment = .production) -> NewSubscription {
        NewSubscription(originalTransactionID: id, environment: environment, receipt: ReceiptData(base64: receipt))
    }

    @Test func addSubscriptionsIsIdempotentAndNeverOverwritesAReceipt() async throws {
        try await withLedger { ledger, _ in
            let first = try ledger.addSubscriptions(
                [Self.new("a", receipt: "ra"), Self.new("b", receipt: "rb"), Self.new("a", receipt: "ra-again")],
                batchSize: 2)
            #expect(first == (inserted: 2, alreadyPresent: 1))
            let second = try ledger.addSubscriptions(
                [Self.new("a", receipt: "ra-new"), Self.new("b", receipt: "rb"), Self.new("c", receipt: "rc")],
                batchSize: 2)
            #expect(second == (inserted: 1, alreadyPresent: 2))

            let all = try ledger.connection.query("SELECT id FROM subscriptions ORDER BY id").map { try $0["id"].int64() ?? 0 }
            #expect(all.count == 3)
            let loaded = try ledger.loadForVerification(ids: all)
            #expect(loaded.map(\.originalTransactionID) == ["a", "b", "c"])
            #expect(loaded.map(\.receipt?.base64) == ["ra", "rb", "rc"], "the first receipt stays")
            #expect(loaded.allSatisfy { $0.state == nil && $0.version == 0 })
            let due = try ledger.dueSubscriptions(now: .now, limit: 10)
            #expect(Set(due.ids) == Set(all), "new subscriptions are due at once")
        }
    }

    @Test func loadForVerificationKeepsTheOrderAndSkipsMissingIds() async throws {
        try await withLedger { ledger, _ in
            let seeded = try ledger.seed(["x", "y", "z"])
            let loaded = try ledger.loadForVerification(ids: [seeded[2].id, 999_999, seeded[0].id])
            #expect(loaded.map(\.originalTransactionID) == ["z", "x"])
            #expect(loaded.map(\.receipt?.base64) == ["receipt-of-z", "receipt-of-x"])
        }
    }

    @Test func keysetPagesReturnEachDueIdOnceInOrder() async throws {
        try await withLedger { ledger, _ in
            let ids = (1...30).map { String(7000 + $0) }
            let subscriptions = try ledger.seed(ids)
            // Four refunded or invalid subscriptions, written the way the fleet writes them, last
            // looked at more than the 30 days after the refund or failure that it watches them for.
            for (index, subscription) in subscriptions.prefix(4).enumerated() {
                if index < 2 {
                    var months = S.months(subscription.originalTransactionID, 1)
                    months[0].cancelled = S.day(1, 5)
                    let write = try S.write(subscription, S.response(months), at: S.day(2, 10))
                    #expect(try ledger.persist(write, nextNightlyRun: S.nightlyRun).writtenVersion == 1)
                } else {
                    for (version, day) in [(Int64(1), S.day(1, 6)), (2, S.day(2, 10))] {
                        let write = VerificationWrite.permanentFailure(
                            of: try ledger.reload(subscription), reason: "21003", attempt: S.attempt(at: day))
                        #expect(try ledger.persist(write, nextNightlyRun: S.nightlyRun).writtenVersion == version)
                    }
                }
            }
            // The rest due at five shared times (ties broken by id); three not due yet; four in the sandbox.
            // The times have microseconds, as now() does, which the cursor must carry exactly.
            let base = S.day(3, 1).date + 0.654_321
            var expected: [(Date, Int64)] = []
            for (index, subscription) in subscriptions.enumerated().dropFirst(4) {
                let notDue = index >= 27
                let at = notDue ? base + 86_400 : base + Double(index % 5) * 60
                try ledger.connection.execute(
                    "UPDATE subscriptions SET next_check_at = $1, environment = $2 WHERE id = $3",
                    [.timestamptz(at), .text(index % 7 == 0 ? "Sandbox" : "Production"), .int64(subscription.id)])
                if !notDue { expected.append((at, subscription.id)) }
            }
            expected.sort { ($0.0, $0.1) < ($1.0, $1.1) }
            let now = base + 3600

            func walk(_ environment: AppStoreEnvironment?) throws -> [Int64] {
                var seen: [Int64] = [], cursor: DueCursor? = nil
                repeat {
                    let page = try ledger.dueSubscriptions(now: now, after: cursor, limit: 4, environment: environment)
                    #expect(page.subscriptions.count <= 4)
                    seen += page.ids
                    cursor = page.next
                } while cursor != nil
                return seen
            }
            #expect(try walk(nil) == expected.map(\.1))
            let sandbox = Set(subscriptions.enumerated().filter { $0.offset % 7 == 0 }.map(\.element.id))
            #expect(try walk(.sandbox) == expected.map(\.1).filter(sandbox.contains))
            #expect(try walk(.production) == expected.map(\.1).filter { !sandbox.contains($0) })
        }
    }

    /// A scheduler pass pages through what is due while workers verify what it enqueued: a row
    /// written since the pass began is left to the next pass, or it would be enqueued again.
    @Test func aPassLeavesOutSubscriptionsWrittenSinceItBegan() async throws {
        try await withLedger { ledger, _ in
            try ledger.addSubscriptions(["3001", "3002", "3003"].map {
                NewSubscription(originalTransactionID: $0, receipt: ReceiptData(base64: "cmVjZWlwdA=="))
            })
            let now = Date().addingTimeInterval(31 * 86_400)
            let passStarted = try ledger.databaseTime()
            try ledger.connection.execute(
                "UPDATE subscriptions SET next_check_at = now() + interval '1 day', updated_at = now() WHERE original_transaction_id = '3002'")
            let all = try ledger.dueSubscriptions(now: now, limit: 10).ids
            let thisPass = try ledger.dueSubscriptions(now: now, limit: 10, unchangedSince: passStarted).ids
            #expect(all.count == 3)
            #expect(thisPass.count == 2 && Set(thisPass).isSubset(of: Set(all)))
            let written = try ledger.subscription(originalTransactionID: "3002", app: "default")?.id
            #expect(written.map { !thisPass.contains($0) } == true)
        }
    }

    @Test func detailAndCounts() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            _ = try ledger.seed(["2000"])
            let analysis = try S.analyse(baseline, S.response(S.months("1000", 2)), at: S.day(2, 10))
            let attempt = S.attempt(at: S.day(2, 10))
            _ = try ledger.persist(.analysed(analysis, of: baseline, attempt: attempt), nextNightlyRun: S.nightlyRun)

            let detail = try #require(try ledger.detail(id: baseline.id))
            #expect(detail.transactions == analysis.transactions)
            #expect(detail.events.map(\.event) == analysis.events)
            #expect(detail.events.allSatisfy { $0.publishedAt == nil })
            #expect(detail.verifications.count == 2 && detail.verifications.first == attempt, "newest first")
            #expect(detail.subscription.status == .active)
            #expect(detail.subscription.nextCheckAt == S.day(3, 1).date + 600, "just after the paid period")
            #expect(try ledger.subscriptions(originalTransactionID: "1000").map(\.id) == [baseline.id])
            #expect(try ledger.detail(id: 999_999) == nil)

            // The new subscription became due when it was added, by the server's clock.
            let counts = try ledger.counts(now: .now + 1, since: S.day(2, 1).date)
            #expect(counts.subscriptionsByStatus == ["active": 1, "unverified": 1])
            #expect(counts.dueNow == 2, "the new one, and the active one after its period ended")
            #expect(try ledger.verifiedCounts(since: S.day(2, 1).date) == ["default": 1], "the attempt Apple answered since then")
            #expect(counts.eventsByType == ["renewed": 1])
            #expect(counts.unpublishedEvents == 1)
            #expect((counts.oldestUnpublishedAge ?? -1) >= 0)
        }
    }
}
