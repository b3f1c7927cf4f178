import Foundation
import PostgresClient

/// How a scheduler pass stands, or a night (its passes together).
public struct SchedulerPassFigures: Sendable, Equatable {
    public var startedAt: Date
    /// The due subscriptions it found (those already queued, by any pass, it skipped); a night's,
    /// the most one of its passes found (a later pass finds again what an earlier one queued).
    public var due: Int
    public var enqueued: Int
    public var verified: Int
    public var dead: Int
    /// Dead letters replayed: each then counts again as verified or dead.
    public var replayed: Int
    /// Jobs still queued: 0 once finished; nil where the ledger cannot tell (the tally in Redis tells).
    public var toGo: Int?
    /// When its last job settled, none left to go; as it started, for a pass that had nothing to do.
    public var finishedAt: Date?
    /// The fleet's verifications (calls to Apple) and events from its start to its last settled
    /// job, or up to now while it is not finished.
    public var appleCalls: Int
    public var events: Int

    public init(
        startedAt: Date, due: Int, enqueued: Int, verified: Int, dead: Int, replayed: Int, toGo: Int?, finishedAt: Date?,
        appleCalls: Int, events: Int
    ) {
        (self.startedAt, self.due, self.enqueued, self.verified, self.dead, self.replayed) = (startedAt, due, enqueued, verified, dead, replayed)
        (self.toGo, self.finishedAt, self.appleCalls, self.events) = (toGo, finishedAt, appleCalls, events)
    }
}

/// One scheduler pass, as the ledger records it (`scheduler_passes`).
public struct SchedulerPassRecord: Sendable, Equatable {
    /// Its run id (`night/N`), which its jobs and its tally in Redis carry.
    public var passID: String
    public var night: String
    /// Its number in the night, from 1.
    public var pass: Int
    /// As last recorded; Apple calls and events counted to its last settled job.
    public var figures: SchedulerPassFigures
    /// When its latest job was settled, as last recorded.
    public var lastSettledAt: Date?
}

/// One night of scheduler passes (`scheduler_nights`), with its passes.
public struct SchedulerNightRecord: Sendable, Equatable {
    public var night: String
    /// When its first pass started.
    public var startedAt: Date
    /// The fleet's verifications and events from its first pass's start up to `countedTo` (the
    /// last settled job of any of its passes when last counted; nil before).
    public var appleCalls: Int
    public var events: Int
    public var countedTo: Date?
    /// Latest first.
    public var passes: [SchedulerPassRecord]
}

extension Ledger {
    /// The number the next pass of `night` takes: one more than its last, 1 for its first.
    public func nextSchedulerPass(night: String) throws -> Int {
        Int(try connection.query(
            "SELECT coalesce(max(pass), 0) + 1 AS pass FROM scheduler_passes WHERE night = $1", [.text(night)]
        )[0]["pass"].int64() ?? 1)
    }

    /// Records that pass number `pass` of `night`, run id `passID`, started at `startedAt` (and the
    /// night, with its first pass).
    public func beginSchedulerPass(passID: String, night: String, pass: Int, startedAt: Date) throws {
        try connection.transaction { connection in
            try connection.execute(
                "INSERT INTO scheduler_nights (night, started_at) VALUES ($1, $2) ON CONFLICT (night) DO NOTHING",
                [.text(night), .timestamptz(startedAt)])
            try connection.execute(
                "INSERT INTO scheduler_passes (run_id, night, pass, started_at) VALUES ($1, $2, $3, $4)",
                [.text(passID), .text(night), .int64(Int64(pass)), .timestamptz(startedAt)])
        }
    }

    /// Records the due subscriptions pass `passID` has found and the jobs it has enqueued so far; a
    /// pass that `ended` having enqueued none had nothing to do, and finished as it started.
    public func recordSchedulerPass(passID: String, due: Int, enqueued: Int, ended: Bool) throws {
        try connection.execute("""
            UPDATE scheduler_passes SET due = $2, enqueued = $3,
                finished_at = CASE WHEN $4 AND $3 = 0 THEN started_at ELSE finished_at END
            WHERE run_id = $1
            """, [.text(passID), .int64(Int64(due)), .int64(Int64(enqueued)), .bool(ended)])
    }

    /// The passes started after `since` that enqueued jobs, oldest first: those whose figures their
    /// tallies may still move, a finished one's too (a dead letter of its replayed reopens it).
    public func schedulerPassesWithJobs(startedAfter since: Date) throws -> [SchedulerPassRecord] {
        try connection.query(
            "SELECT \(Self.passColumns) FROM scheduler_passes WHERE enqueued > 0 AND started_at > $1 ORDER BY started_at",
            [.timestamptz(since)]
        ).map(Self.pass)
    }

    /// Brings pass `passID`'s figures up to date from its tally: verified, dead and replayed, when
    /// its latest job was settled, finished once `toGo` is 0 (open again while a replayed dead
    /// letter is to go), and the fleet's Apple calls and events from its start to that job.
    public func updateSchedulerPass(
        passID: String, verified: Int, dead: Int, replayed: Int, toGo: Int, lastSettledAt: Date?
    ) throws {
        let activity = Self.fleetActivity(from: "p.started_at", to: "coalesce($5::timestamptz, p.started_at)")
        try connection.execute("""
            UPDATE scheduler_passes p SET verified = $2, dead = $3, replayed = $4, last_settled_at = $5::timestamptz,
                finished_at = CASE WHEN $6 = 0 THEN coalesce($5::timestamptz, p.started_at) END,
                apple_calls = \(activity.appleCalls), events = \(activity.events)
            WHERE run_id = $1
            """, [.text(passID), .int64(Int64(verified)), .int64(Int64(dead)), .int64(Int64(replayed)),
                  lastSettledAt.map { .timestamptz($0) } ?? .null, .int64(Int64(toGo))])
    }

    /// Counts the fleet's Apple calls and events of `night` again, from its first pass's start to
    /// the last settled job of any of its passes.
    public func updateSchedulerNight(_ night: String) throws {
        let activity = Self.fleetActivity(from: "n.started_at", to: "s.last")
        try connection.execute("""
            UPDATE scheduler_nights n SET counted_to = s.last, apple_calls = \(activity.appleCalls), events = \(activity.events)
            FROM (SELECT max(coalesce(last_settled_at, started_at)) AS last FROM scheduler_passes WHERE night = $1) s
            WHERE n.night = $1
            """, [.text(night)])
    }

    /// The latest `limit` nights, newest first, each with all its passes.
    public func schedulerNights(limit: Int) throws -> [SchedulerNightRecord] {
        var nights = try connection.query(
            "SELECT night, started_at, apple_calls, events, counted_to FROM scheduler_nights ORDER BY started_at DESC LIMIT $1",
            [.int64(Int64(limit))]
        ).map { row in
            SchedulerNightRecord(
                night: try row["night"].text() ?? "", startedAt: try row["started_at"].timestamptz() ?? Date(timeIntervalSince1970: 0),
                appleCalls: Int(try row["apple_calls"].int64() ?? 0), events: Int(try row["events"].int64() ?? 0),
                countedTo: try row["counted_to"].timestamptz(), passes: [])
        }
        let passes = try connection.query("""
            SELECT \(Self.passColumns) FROM scheduler_passes
            WHERE night IN (SELECT night FROM scheduler_nights ORDER BY started_at DESC LIMIT $1)
            ORDER BY pass DESC
            """, [.int64(Int64(limit))]).map(Self.pass)
        for index in nights.indices {
            nights[index].passes = passes.filter { $0.night == nights[index].night }
        }
        return nights
    }

    /// The fleet's Apple calls (verification attempts) and events from `from` until `to`.
    public func fleetActivity(from: Date, to: Date) throws -> (appleCalls: Int, events: Int) {
        let activity = Self.fleetActivity(from: "$1::timestamptz", to: "$2::timestamptz")
        let row = try connection.query(
            "SELECT \(activity.appleCalls) AS apple_calls, \(activity.events) AS events", [.timestamptz(from), .timestamptz(to)])[0]
        return (Int(try row["apple_calls"].int64() ?? 0), Int(try row["events"].int64() ?? 0))
    }

    /// The counts of the fleet's verification attempts and events stamped from `from` until (not
    /// at) `to`, two SQL timestamps: a span's counts add up with the next one's. Each reads one
    /// index (`verifications_recent`, `events_created`).
    private static func fleetActivity(from: String, to: String) -> (appleCalls: String, events: String) {
        ("(SELECT count(*) FROM verifications WHERE attempted_at >= \(from) AND attempted_at < \(to))",
         "(SELECT count(*) FROM events WHERE created_at >= \(from) AND created_at < \(to))")
    }

    private static let passColumns = """
        run_id, night, pass, started_at, due, enqueued, verified, dead, replayed, last_settled_at, finished_at, apple_calls, events
        """

    private static func pass(_ row: PostgresRow) throws -> SchedulerPassRecord {
        let count = { (name: String) in Int(try row[name].int64() ?? 0) }
        let finishedAt = try row["finished_at"].timestamptz()
        return SchedulerPassRecord(
            passID: try row["run_id"].text() ?? "", night: try row["night"].text() ?? "", pass: try count("pass"),
            figures: SchedulerPassFigures(
                startedAt: try row["started_at"].timestamptz() ?? Date(timeIntervalSince1970: 0),
                due: try count("due"), enqueued: try count("enqueued"), verified: try count("verified"), dead: try count("dead"),
                replayed: try count("replayed"), toGo: finishedAt == nil ? nil : 0, finishedAt: finishedAt,
                appleCalls: try count("apple_calls"), events: try count("events")),
            lastSettledAt: try row["last_settled_at"].timestamptz())
    }
}
