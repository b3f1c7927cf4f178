import Foundation
import JobQueue
import Ledger

/// A night of scheduler passes as it stands.
public struct SchedulerNight: Sendable, Equatable {
    public var night: String
    /// Latest first, their figures as they stand.
    public var passes: [SchedulerPassRecord]
    public var totals: SchedulerPassFigures
}

/// The scheduler's passes by night: the ledger's records, brought up to date from each pass's
/// tally in Redis while Redis keeps it (`JobQueue.runMemory` after its last enqueue).
public enum SchedulerPasses {
    /// Records in the ledger how each pass of the last `runMemory` with jobs stands, where its tally
    /// moved: verified, dead, replayed, finished (or open again, a dead letter replayed), the
    /// fleet's Apple calls and events while it ran, and its night's.
    public static func record(ledger: Ledger, queue: JobQueue, now: Date) throws {
        let passes = try ledger.schedulerPassesWithJobs(startedAfter: now.addingTimeInterval(-Double(JobQueue.runMemory.components.seconds)))
        var nights: [String] = []
        for (pass, tally) in zip(passes, try queue.tallies(ofRuns: passes.map(\.passID))) {
            guard let tally, moved(pass, tally) else { continue }
            try ledger.updateSchedulerPass(
                passID: pass.passID, verified: tally.verified, dead: tally.dead, replayed: tally.replayed, toGo: tally.toGo,
                lastSettledAt: date(tally.lastSettledAt))
            if !nights.contains(pass.night) { nights.append(pass.night) }
        }
        for night in nights { try ledger.updateSchedulerNight(night) }
    }

    /// The latest `limit` nights and their passes as they stand at `now`: a pass whose tally moved
    /// since the ledger recorded it has the tally's figures, and what the fleet did since, counted now.
    public static func nights(ledger: Ledger, queue: JobQueue, limit: Int, now: Date) throws -> [SchedulerNight] {
        let records = try ledger.schedulerNights(limit: limit)
        let ids = records.flatMap(\.passes).map(\.passID)
        let tallies = Dictionary(zip(ids, try queue.tallies(ofRuns: ids)), uniquingKeysWith: { first, _ in first })
        return try records.map { night in
            var counted = true
            let passes = try night.passes.map { record in
                guard let tally = tallies[record.passID] ?? nil else { return record }
                var current = record
                current.lastSettledAt = date(tally.lastSettledAt)
                (current.figures.verified, current.figures.dead, current.figures.replayed) = (tally.verified, tally.dead, tally.replayed)
                current.figures.toGo = tally.toGo
                current.figures.finishedAt = tally.toGo == 0 ? current.lastSettledAt ?? record.figures.startedAt : nil
                if moved(record, tally) || current.figures.finishedAt == nil {
                    counted = false
                    let since = try ledger.fleetActivity(
                        from: record.lastSettledAt ?? record.figures.startedAt, to: current.figures.finishedAt ?? now)
                    current.figures.appleCalls += since.appleCalls
                    current.figures.events += since.events
                }
                return current
            }
            var totals = SchedulerPassFigures(
                startedAt: night.startedAt, due: passes.map(\.figures.due).max() ?? 0, enqueued: passes.sum(\.enqueued),
                verified: passes.sum(\.verified), dead: passes.sum(\.dead), replayed: passes.sum(\.replayed),
                toGo: passes.contains { $0.figures.toGo == nil } ? nil : passes.sum { $0.toGo ?? 0 },
                finishedAt: passes.contains { $0.figures.finishedAt == nil } ? nil : passes.compactMap(\.figures.finishedAt).max(),
                appleCalls: night.appleCalls, events: night.events)
            if !counted {
                let since = try ledger.fleetActivity(from: night.countedTo ?? night.startedAt, to: totals.finishedAt ?? now)
                totals.appleCalls += since.appleCalls
                totals.events += since.events
            }
            return SchedulerNight(night: night.night, passes: passes, totals: totals)
        }
    }

    /// Whether the ledger's record of `pass` says other than its tally.
    private static func moved(_ pass: SchedulerPassRecord, _ tally: RunTally) -> Bool {
        let recorded = pass.figures
        return (recorded.verified, recorded.dead, recorded.replayed) != (tally.verified, tally.dead, tally.replayed)
            || (recorded.finishedAt != nil) != (tally.toGo == 0)
            || pass.lastSettledAt.map { Int64(($0.timeIntervalSince1970 * 1_000).rounded()) } != tally.lastSettledAt
    }

    /// A tally's time (ms since the epoch, Redis's clock) as a date.
    private static func date(_ milliseconds: Int64?) -> Date? {
        milliseconds.map { Date(timeIntervalSince1970: Double($0) / 1_000) }
    }
}

extension [SchedulerPassRecord] {
    fileprivate func sum(_ figure: (SchedulerPassFigures) -> Int) -> Int {
        reduce(0) { $0 + figure($1.figures) }
    }
}
