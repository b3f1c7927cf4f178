import Foundation
import PostgresClient

/// One operator action, as the audit trail keeps it.
public struct AuditEntry: Sendable, Equatable, Encodable {
    /// Where the action came from: the command line (its OS user), the API (its client's token
    /// name) or the console (its operator).
    public enum Via: String, Sendable, Encodable {
        case cli, api, console
    }

    public var id: Int64
    public var at: Date
    public var actor: String
    public var via: Via
    /// What was done, a dotted name: `fleet.pause`, `dead.replay`, `webhooks.add`, ….
    public var action: String
    /// What it was done to (an endpoint id, a subscription id, a filter), when it names one.
    public var target: String?
    /// The action's parameters and results (a reason, counts), never a secret.
    public var details: [String: String]
    /// "ok", or "failed: " and the error.
    public var outcome: String

    /// The details as `key=value` pairs by key, as `audit` and the console show them.
    public var shownDetails: String {
        details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    /// The entry in one line, as `receiptfleet audit` lists it.
    public var line: String {
        "\(at.formatted(.iso8601))  \(via.rawValue):\(actor)  \(action)" + (target.map { " \($0)" } ?? "") + "  \(outcome)"
            + (details.isEmpty ? "" : "  \(shownDetails)")
    }

    /// The entry as one line of JSON, keys sorted, as `receiptfleet audit --json` lists it.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}

/// An action about to be recorded: `Ledger.record` gives it its id and time.
public struct AuditRecord: Sendable {
    public var actor: String
    public var via: AuditEntry.Via
    public var action: String
    public var target: String?
    public var details: [String: String]
    public var outcome: String

    public init(actor: String, via: AuditEntry.Via, action: String, target: String? = nil,
                details: [String: String] = [:], outcome: String = "ok") {
        (self.actor, self.via, self.action, self.target, self.details, self.outcome) = (actor, via, action, target, details, outcome)
    }
}

extension Ledger {
    /// Adds `record` to the audit trail.
    public func record(_ record: AuditRecord) throws {
        let details = try JSONEncoder().encode(record.details)
        try connection.execute(
            "INSERT INTO audit_log (actor, via, action, target, details, outcome) VALUES ($1, $2, $3, $4, $5::jsonb, $6)",
            [.text(record.actor), .text(record.via.rawValue), .text(record.action), record.target.map { .text($0) } ?? .null,
             .text(String(decoding: details, as: UTF8.self)), .text(record.outcome)])
    }

    /// The newest entry of exactly `action`, if any.
    public func latestAudited(_ action: String) throws -> AuditEntry? {
        try auditTrail(matching: "action = $1", [.text(action)], limit: 1).first
    }

    /// The newest `limit` entries at or after `since` (of `action` and its sub-actions when given;
    /// older than the entry `before` when given, to page on), newest first.
    public func auditTrail(since: Date? = nil, action: String? = nil, before: Int64? = nil, limit: Int = 100) throws -> [AuditEntry] {
        try auditTrail(
            matching: """
                ($1::timestamptz IS NULL OR at >= $1) AND ($2::text IS NULL OR action = $2 OR action LIKE $2 || '.%') \
                AND ($3::bigint IS NULL OR id < $3)
                """,
            [since.map { .timestamptz($0) } ?? .null, action.map { .text($0) } ?? .null, before.map { .int64($0) } ?? .null], limit: limit)
    }

    /// The newest `limit` entries that `condition` (SQL over `parameters`) keeps, newest first.
    private func auditTrail(matching condition: String, _ parameters: [PostgresValue], limit: Int) throws -> [AuditEntry] {
        let rows = try connection.query("""
            SELECT id, at, actor, via, action, target, details::text AS details, outcome FROM audit_log
            WHERE \(condition) ORDER BY id DESC LIMIT $\(parameters.count + 1)
            """, parameters + [.int64(Int64(limit))])
        return try rows.map { row in
            AuditEntry(
                id: try row["id"].int64() ?? 0, at: try row["at"].timestamptz() ?? Date(timeIntervalSince1970: 0),
                actor: try row["actor"].text() ?? "", via: AuditEntry.Via(rawValue: try row["via"].text() ?? "") ?? .cli,
                action: try row["action"].text() ?? "", target: try row["target"].text(),
                details: (try? JSONDecoder().decode([String: String].self, from: Data((try row["details"].text() ?? "{}").utf8))) ?? [:],
                outcome: try row["outcome"].text() ?? "")
        }
    }
}

extension Ledger {
    /// Runs `action` and records it, as it ended: "ok" with `results`' details, or "failed: "
    /// and the error, which is then rethrown. An action whose record cannot be written (PostgreSQL
    /// failing in the middle of an incident) has still happened: `unrecorded` hears why.
    public func audited<T>(
        _ record: AuditRecord, results: (T) -> [String: String] = { _ in [:] }, unrecorded: (any Error) -> Void,
        _ action: () throws -> T
    ) throws -> T {
        var ended = record
        do {
            let result = try action()
            ended.details.merge(results(result)) { $1 }
            do { try self.record(ended) } catch { unrecorded(error) }
            return result
        } catch {
            ended.outcome = "failed: \(error)"
            do { try self.record(ended) } catch let recording { unrecorded(recording) }
            throw error
        }
    }
}
