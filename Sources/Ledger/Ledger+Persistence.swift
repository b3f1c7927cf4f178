import AppStore
import Foundation
import PostgresClient

extension Ledger {
    /// Writes many jobs' results in one transaction and returns each one's outcome, in order.
    ///
    /// Normally that is one statement, one round trip, for the whole batch. If the database rejects
    /// it (one write breaks a constraint, say), the batch is written again one write at a time, each
    /// under a SAVEPOINT, so that only the bad write fails (`.failed`) and the others go ahead.
    /// Writes that lost the compare-and-set come back `.stale`, with nothing written for them.
    /// - Parameter nextNightlyRun: the scheduler's next nightly run, for `schedule`.
    /// - Throws: only when the connection fails; the batch is then either wholly written or not at all.
    public func persist(_ writes: [VerificationWrite], nextNightlyRun: Date) throws -> [WriteOutcome] {
        guard !writes.isEmpty else { return [] }
        // Two writes for one subscription would meet in one UPDATE; one at a time, the second is stale.
        if Set(writes.map(\.subscriptionID)).count == writes.count {
            do {
                return try atomically(writes) { try run(writes, nextNightlyRun: nextNightlyRun) }
            } catch where (error as? PostgresError)?.kind == .server {
                // Rolled back as a whole: fall through to find the write it was about.
            }
        }
        return try connection.transaction { connection in
            try writes.map { write in
                try connection.execute("SAVEPOINT write")
                do {
                    let outcome = try run([write], nextNightlyRun: nextNightlyRun)[0]
                    try connection.execute("RELEASE SAVEPOINT write")
                    return outcome
                } catch let error as PostgresError where error.kind == .server {
                    try connection.execute("ROLLBACK TO SAVEPOINT write")
                    return .failed(error)
                }
            }
        }
    }

    /// Writes one job's result in one statement (and its purchases, in the same transaction).
    /// `.stale` means nothing was written; the overload with `reanalysing` deals with it.
    /// - Throws: the database's error, with nothing written.
    public func persist(_ write: VerificationWrite, nextNightlyRun: Date) throws -> WriteOutcome {
        try atomically([write]) { try run([write], nextNightlyRun: nextNightlyRun)[0] }
    }

    /// Writes one job's result; when another writer got there first, reads the subscription again,
    /// analyses the same answer from Apple again on top of what that writer stored, and tries again,
    /// up to `attempts` times in all. Returns `.stale` only if it lost every time.
    ///
    /// A stale answer never wins: when what the other writer stored was judged later than this
    /// answer (its `verified_at`, Apple's request date), this answer is older news. Only the attempt
    /// is recorded, and the newer state stands, so a state never goes backwards and a renewal seen
    /// first is not undone (then announced again) by an answer fetched before it.
    /// - Parameter reanalyse: the analysis of this job's verifyReceipt response on top of a stored
    ///   state, e.g. `{ try SubscriptionAnalyzer.analyze(stored: $0, response: response, …) }`.
    public func persist(
        _ write: VerificationWrite, nextNightlyRun: Date, attempts: Int = 3,
        reanalysing reanalyse: (SubscriptionState?) throws -> Analysis
    ) throws -> WriteOutcome {
        var write = write
        var outcome = try persist(write, nextNightlyRun: nextNightlyRun)
        for _ in 1..<max(attempts, 1) {
            guard case .stale = outcome else { break }
            guard let current = try loadForVerification(ids: [write.subscriptionID]).first else { return .missing }
            if let answered = write.change?.analysis.state.verifiedAt, let stored = current.state?.verifiedAt,
               stored > answered
            {
                return try persist(.unchanged(current, attempt: write.attempt), nextNightlyRun: nextNightlyRun)
            }
            write.change = VerificationWrite.Change(analysis: try reanalyse(current.state), expectedVersion: current.version)
            outcome = try persist(write, nextNightlyRun: nextNightlyRun)
        }
        return outcome
    }

    /// The statement, then the purchases of the writes it wrote. Call it in a transaction when
    /// writes carry purchases (`atomically`), so a subscription's new state never commits without
    /// them: the next look would otherwise count them as known and never announce them.
    private func run(_ writes: [VerificationWrite], nextNightlyRun: Date) throws -> [WriteOutcome] {
        let rows = try connection.query(
            PersistenceStatement.prepared,
            PersistenceStatement.parameters(writes, schedule: schedule, nextNightlyRun: nextNightlyRun))
        let outcomes = try PersistenceStatement.outcomes(rows)
        for (write, outcome) in zip(writes, outcomes) {
            guard case .written = outcome, write.change != nil, let purchases = write.purchases else { continue }
            _ = try Self.record(purchases, on: connection)
        }
        return outcomes
    }

    /// `body` in a transaction if any write carries purchases; otherwise its one statement is a
    /// transaction of its own, and the batch keeps its single round trip.
    private func atomically<T>(_ writes: [VerificationWrite], _ body: () throws -> T) throws -> T {
        guard writes.contains(where: { $0.purchases != nil }) else { return try body() }
        return try connection.transaction { _ in try body() }
    }
}
