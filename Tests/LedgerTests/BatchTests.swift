import AppStore
import Foundation
import Ledger
import PostgresClient
import Testing

/// Many jobs' results in one transaction.
@Suite struct BatchTests {
    typealias S = Scenario

    @Test func aBatchWritesEveryResult() async throws {
        try await withLedger { ledger, _ in
            let ids = (1...50).map { String(5000 + $0) }
            let subscriptions = try ledger.seed(ids)
            let writes = try subscriptions.map { try S.write($0, S.response(S.months($0.originalTransactionID, 1)), at: S.day(1, 10)) }
            let outcomes = try ledger.persist(writes, nextNightlyRun: S.nightlyRun)
            #expect(outcomes.map(\.writtenVersion) == Array(repeating: 1, count: 50))
            let loaded = try ledger.loadForVerification(ids: subscriptions.map(\.id))
            #expect(loaded.map(\.state?.status) == Array(repeating: .active, count: 50))
            #expect(loaded.map(\.state?.originalTransactionID) == ids, "each row got its own analysis")
            #expect(try ledger.connection.query("SELECT count(*) AS n FROM transactions")[0]["n"].int64() == 50)
            #expect(try ledger.connection.query("SELECT count(*) AS n FROM verifications")[0]["n"].int64() == 50)
        }
    }

    @Test func oneBadWriteFailsAloneAndAVanishedSubscriptionIsReported() async throws {
        try await withLedger { ledger, _ in
            let ids = ["2001", "2002", "2003", "2004"]
            let baselines = try ids.map { try ledger.seedVerified($0) }
            var writes = try baselines.map { try S.write($0, S.response(S.months($0.originalTransactionID, 2)), at: S.day(2, 10)) }
            // 2002's renewal event cannot be stored; 2003 is deleted after it was read.
            writes[1].change?.analysis.events[0].id = "not-a-uuid"
            try ledger.connection.execute("DELETE FROM subscriptions WHERE id = $1", [.int64(baselines[2].id)])

            let outcomes = try ledger.persist(writes, nextNightlyRun: S.nightlyRun)
            #expect(outcomes[0].writtenVersion == 2)
            guard case .failed(let error) = outcomes[1] else {
                Issue.record("the bad write must fail, got \(outcomes[1])")
                return
            }
            #expect(error.sqlState == "22P02", "invalid uuid text: \(error)")
            #expect(outcomes[2].isMissing)
            #expect(outcomes[3].writtenVersion == 2)

            for written in [baselines[0], baselines[3]] {
                #expect(try ledger.reload(written).state?.latestTransactionID == "\(written.originalTransactionID)02")
                #expect(try ledger.count("events", of: written) == 1)
                #expect(try ledger.count("transactions", of: written) == 2)
                #expect(try ledger.count("verifications", of: written) == 2)
            }
            let failed = baselines[1]
            #expect(try ledger.reload(failed).version == failed.version, "nothing of the bad write remains")
            #expect(try ledger.reload(failed).state == failed.state)
            #expect(try ledger.count("events", of: failed) == 0)
            #expect(try ledger.count("transactions", of: failed) == 1)
            #expect(try ledger.count("verifications", of: failed) == 1)
        }
    }

    @Test func twoResultsForOneSubscriptionInOneBatch() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("3001")
            let first = try S.write(baseline, S.response(S.months("3001", 2)), at: S.day(2, 10))
            let second = try S.write(baseline, S.response(S.months("3001", 2)), at: S.day(2, 11))
            let outcomes = try ledger.persist([first, second], nextNightlyRun: S.nightlyRun)
            #expect(outcomes[0].writtenVersion == 2)
            #expect(outcomes[1].isStale, "both read version 1; the first wrote version 2")
            #expect(try ledger.reload(baseline).state?.verifiedAt == S.day(2, 10))
        }
    }
}
