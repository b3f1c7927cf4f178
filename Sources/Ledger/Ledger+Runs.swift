import Foundation
import PostgresClient

/// One scheduler run, as the ledger records it (`scheduler_runs`).
public struct SchedulerRunRecord: Sendable, Equatable {
    public var runID: String
    public var startedAt: Date
    public var due: Int
    public var enqueued: Int
    public var verified: Int
    public var dead: Int
    /// When its latest job was settled; the run finished then once none was left to go.
    public var lastSettledAt: Date?
    public var finishedAt: Date?
    /// The fleet's verifications (calls to Apple) and events between its start and its last settled job.
    public var appleCalls: Int
    public var events: Int
}

extension Ledger {
    /// Records a scheduler pass of run `runID`: the run started with its first pass, its enqueued
    /// jobs add up, and its due subscriptions are the most a pass found (a pass again finds those
    /// an earlier one queued).
    public func recordSchedulerPass(runID: String, startedAt: Date, due: Int, enqueued: Int) throws {
        try connection.execute("""
            INSERT INTO scheduler_runs (run_id, started_at, due, enqueued) VALUES ($1, $2, $3, $4)
            ON CONFLICT (run_id) DO UPDATE SET due = greatest(scheduler_runs.due, excluded.due),
                enqueued = scheduler_runs.enqueued + excluded.enqueued
            """, [.text(runID), .timestamptz(startedAt), .int64(Int64(due)), .int64(Int64(enqueued))])
    }

    /// The runs not yet finished that started after `since`, oldest first: those whose figures can still move.
    public func unfinishedSchedulerRuns(since: Date) throws -> [String] {
        try connection.query(
            "SELECT run_id FROM scheduler_runs WHERE finished_at IS NULL AND started_at > $1 ORDER BY started_at",
            [.timestamptz(since)]
        ).compactMap { try $0["run_id"].text() }
    }

    /// Brings run `runID`'s figures up to date from its tally: verified, dead, when the latest job
    /// was settled, finished once `toGo` is 0, and the fleet's Apple calls and events while it ran.
    public func updateSchedulerRun(runID: String, verified: Int, dead: Int, toGo: Int, lastSettledAt: Date?) throws {
        try connection.execute("""
            UPDATE scheduler_runs r SET verified = $2, dead = $3, last_settled_at = $4::timestamptz,
                finished_at = CASE WHEN $5 = 0 THEN $4::timestamptz END,
                apple_calls = (SELECT count(*) FROM verifications WHERE attempted_at >= r.started_at
                               AND attempted_at <= coalesce($4::timestamptz, r.started_at)),
                events = (SELECT count(*) FROM events WHERE created_at >= r.started_at
                          AND created_at <= coalesce($4::timestamptz, r.started_at))
            WHERE run_id = $1
            """, [.text(runID), .int64(Int64(verified)), .int64(Int64(dead)), lastSettledAt.map { .timestamptz($0) } ?? .null,
                  .int64(Int64(toGo))])
    }

    /// The latest `limit` runs, newest first.
    public func schedulerRuns(limit: Int = 14) throws -> [SchedulerRunRecord] {
        try connection.query("""
            SELECT run_id, started_at, due, enqueued, verified, dead, last_settled_at, finished_at, apple_calls, events
            FROM scheduler_runs ORDER BY started_at DESC LIMIT $1
            """, [.int64(Int64(limit))]
        ).map { row in
            SchedulerRunRecord(
                runID: try row["run_id"].text() ?? "", startedAt: try row["started_at"].timestamptz() ?? Date(timeIntervalSince1970: 0),
                due: Int(try row["due"].int64() ?? 0), enqueued: Int(try row["enqueued"].int64() ?? 0),
                verified: Int(try row["verified"].int64() ?? 0), dead: Int(try row["dead"].int64() ?? 0),
                lastSettledAt: try row["last_settled_at"].timestamptz(), finishedAt: try row["finished_at"].timestamptz(),
                appleCalls: Int(try row["apple_calls"].int64() ?? 0), events: Int(try row["events"].int64() ?? 0))
        }
    }
}
