import Foundation
import Hummingbird
import Ledger

/// The audit trail, as `receiptfleet audit` lists it: every operator action from the command
/// line, the API and the console, newest first, filtered by action and paged.
extension OpsConsole {
    static let auditPage = 100

    func auditTrail(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let query = request.uri.queryParameters
        let action = query["action"].map { String($0).trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        let before = try query["before"].map { text -> Int64 in
            guard let id = Int64(text), id > 0 else { throw ConsoleProblem.badRequest("'\(text.prefix(40))' is not an audit entry's id.") }
            return id
        }
        let entries = try await lanes.run { desk in try desk.ledger.auditTrail(action: action, before: before, limit: Self.auditPage + 1) }
        return page("audit", AuditView(viewer: viewer, action: action ?? "", before: before,
                                       entries: Array(entries.prefix(Self.auditPage)), more: entries.count > Self.auditPage))
    }
}

struct AuditView {
    let chrome: Chrome
    var action: String
    var summary: String
    var entries: [Entry]
    var olderPage: String?
    var newestPage: String?

    struct Entry {
        var id: Int64
        var at: String
        var actor: String
        var via: String
        var action: String
        var target: String
        var details: String
        var outcome: String
        var failed: Bool
    }

    init(viewer: OpsConsole.Operator, action: String, before: Int64?, entries: [AuditEntry], more: Bool) {
        (chrome, self.action) = (Chrome("Audit trail", tab: .audit, viewer: viewer), action)
        let of = action.isEmpty ? "" : " of \(action)"
        summary = entries.isEmpty ? "No actions\(of) are recorded\(before == nil ? "" : " before these")."
            : "\(entries.count) action\(entries.count == 1 ? "" : "s")\(of), newest first\(before == nil ? "" : ", older than the last page")."
        self.entries = entries.map { entry in
            Entry(id: entry.id, at: Shown.time(entry.at), actor: entry.actor, via: entry.via.rawValue, action: entry.action,
                  target: entry.target ?? "-", details: entry.shownDetails,
                  outcome: entry.outcome, failed: entry.outcome != "ok")
        }
        let filter = action.isEmpty ? "" : "action=\(action.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["."])) ?? "")"
        olderPage = more ? entries.last.map { "/console/audit?" + (filter.isEmpty ? "" : filter + "&") + "before=\($0.id)" } : nil
        newestPage = before == nil ? nil : "/console/audit" + (filter.isEmpty ? "" : "?" + filter)
    }
}
