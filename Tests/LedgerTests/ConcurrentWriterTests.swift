import AppStore
import Dispatch
import Foundation
import Ledger
import Synchronization
import TestSupport
import Testing

/// Two workers verify one subscription at once (a job delivered twice): both read the same version.
@Suite struct ConcurrentWriterTests {
    typealias S = Scenario

    /// What each writer reports, and the states its re-analysis was given.
    final class Log: Sendable {
        let reanalysedFrom = Mutex<[SubscriptionState?]>([])
    }

    @Test func theLoserRereadsReanalysesAndWritesNoDuplicates() async throws {
        try await TestDatabase.with { database in
            let baseline = try await onOwnThread {
                let connection = try database.connect()
                try migrateForTest(connection)
                return try Ledger(connection).seedVerified("1000")
            }
            let response = try S.response(S.months("1000", 2))
            // Answers of one moment: the loser's is no older than the winner's, so it is analysed again
            // (an older one is not: anOlderAnswerThatLosesNeverMovesTheStateBack).
            let times = [S.day(2, 10), S.day(2, 10)]
            let log = Log()
            // Both writers signal once they have read, then wait until both have.
            let read = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)

            let outcomes = try await withThrowingTaskGroup(of: (Int, WriteOutcome).self) { group in
                for (writer, now) in times.enumerated() {
                    group.addTask {
                        try await onOwnThread {
                            let ledger = Ledger(try database.connect())
                            let loaded = try ledger.reload(baseline)
                            read.signal()
                            go.wait()
                            let outcome = try ledger.persist(
                                S.write(loaded, response, at: now), nextNightlyRun: S.nightlyRun
                            ) { stored in
                                log.reanalysedFrom.withLock { $0.append(stored) }
                                return try S.analyse(stored: stored, "1000", response, at: now)
                            }
                            return (writer, outcome)
                        }
                    }
                }
                try await onOwnThread {
                    read.wait()
                    read.wait()
                    go.signal()
                    go.signal()
                }
                return try await group.reduce(into: [Int: WriteOutcome]()) { $0[$1.0] = $1.1 }
            }

            let versions = outcomes.values.compactMap(\.writtenVersion).sorted()
            #expect(versions == [2, 3], "both written, one after the other")
            let reanalysedFrom = log.reanalysedFrom.withLock { $0 }
            #expect(reanalysedFrom.count == 1, "only the loser analysed again")
            #expect(reanalysedFrom.first??.latestTransactionID == "100002", "on top of the winner's state")
            let loser = try #require(outcomes.first { $0.value.writtenVersion == 3 }?.key)

            let detail = try await onOwnThread { try Ledger(try database.connect()).detail(id: baseline.id) }
            let final = try #require(detail)
            #expect(final.subscription.version == 3)
            #expect(final.subscription.state?.latestTransactionID == "100002")
            #expect(final.subscription.state?.verifiedAt == times[loser], "the last write is the loser's")
            #expect(final.events.map(\.event.type) == [.renewed], "the renewal is announced once")
            #expect(final.transactions.map(\.transactionID) == ["100001", "100002"])
            #expect(final.verifications.count == 3, "the baseline's and one per writer")
        }
    }

    /// The slower of two writers fetched its answer before the renewal the faster one saw: the
    /// older answer loses the compare-and-set and must not move the state back (nor make the next
    /// look announce the renewal, or an expiry and a resubscription, again).
    @Test func anOlderAnswerThatLosesNeverMovesTheStateBack() async throws {
        try await withLedger { ledger, _ in
            let baseline = try ledger.seedVerified("1000")
            let slow = try ledger.reload(baseline), fast = try ledger.reload(baseline)
            let beforeRenewal = S.day(1, 31, hour: 23), afterRenewal = S.day(2, 1, hour: 1)
            let oldAnswer = try S.response(S.months("1000", 1)), newAnswer = try S.response(S.months("1000", 2))

            let first = try ledger.persist(S.write(fast, newAnswer, at: afterRenewal), nextNightlyRun: S.nightlyRun)
            #expect(first.writtenVersion == 2)
            let second = try ledger.persist(S.write(slow, oldAnswer, at: beforeRenewal), nextNightlyRun: S.nightlyRun) {
                try S.analyse(stored: $0, "1000", oldAnswer, at: beforeRenewal)
            }
            #expect(second.writtenVersion == 2, "recorded as an attempt; the state is the newer one")

            let detail = try #require(try ledger.detail(id: baseline.id))
            #expect(detail.subscription.state?.latestTransactionID == "100002")
            #expect(detail.subscription.state?.verifiedAt == afterRenewal)
            #expect(detail.events.map(\.event.type) == [.renewed])
            #expect(detail.verifications.count == 3, "the baseline's and one per writer")
        }
    }
}
