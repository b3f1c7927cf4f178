import Foundation
import Ledger
import PostgresClient
import TestSupport
import Testing

/// The audit trail: what is recorded, how it is read back, and that an action happens (and says
/// so) even when its record cannot be written.
@Suite struct AuditTests {
    struct Refused: Error, CustomStringConvertible {
        var description: String { "the endpoint does not exist" }
    }

    @Test func anActionIsRecordedAsItEnded() async throws {
        try await withLedger { ledger, _ in
            let replayed = try ledger.audited(
                AuditRecord(actor: "alice", via: .cli, action: "dead.replay", target: "run=2026-11-24"),
                results: { ["replayed": "\($0)"] }, unrecorded: { Issue.record("not recorded: \($0)") }
            ) { 3 }
            #expect(replayed == 3)
            #expect(throws: Refused.self) {
                try ledger.audited(AuditRecord(actor: "ops-bob", via: .console, action: "webhooks.disable", target: "endpoint 9"),
                                   unrecorded: { Issue.record("not recorded: \($0)") }) { () throws -> Void in throw Refused() }
            }
            try ledger.record(AuditRecord(actor: "backend", via: .api, action: "fleet.pause", details: ["reason": "maintenance"]))

            let trail = try ledger.auditTrail()
            #expect(trail.map(\.action) == ["fleet.pause", "webhooks.disable", "dead.replay"], "newest first")
            #expect(trail[2].actor == "alice" && trail[2].via == .cli && trail[2].outcome == "ok")
            #expect(trail[2].details == ["replayed": "3"] && trail[2].target == "run=2026-11-24")
            #expect(trail[1].via == .console && trail[1].outcome == "failed: the endpoint does not exist")
            #expect(trail[0].details == ["reason": "maintenance"] && trail[0].target == nil)

            #expect(try ledger.auditTrail(action: "dead").map(\.action) == ["dead.replay"], "an action and its sub-actions")
            #expect(try ledger.auditTrail(action: "dead.replay").count == 1)
            #expect(try ledger.auditTrail(action: "dea").isEmpty, "a prefix of a name is not an action")
            #expect(try ledger.auditTrail(limit: 1).map(\.action) == ["fleet.pause"])
            #expect(try ledger.auditTrail(since: Date() + 3_600).isEmpty)
        }
    }

    @Test func anActionHappensEvenWhenItCannotBeRecorded() async throws {
        try await withLedger { ledger, database in
            _ = try ledger.connection.execute("DROP TABLE audit_log")
            var happened = false
            var why: String?
            try ledger.audited(AuditRecord(actor: "alice", via: .cli, action: "fleet.pause"), unrecorded: { why = "\($0)" }) {
                happened = true
            }
            #expect(happened)
            #expect(why?.contains("audit_log") == true, "\(why ?? "no reason")")
        }
    }
}
