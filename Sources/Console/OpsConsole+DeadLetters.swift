import Foundation
import Hummingbird
import JobQueue

/// Dead letters: the list with filters like `receiptfleet dead list`, replay and purge (one, a filter, all).
extension OpsConsole {
    static let deadLetterPage = 100

    func deadLetters(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let fields = DeadLetterFields(request.uri.queryParameters)
        let filter = try fields.filter()
        let letters = try await lanes.run { desk in try desk.queue.deadLetters(matching: filter, limit: Self.deadLetterPage + 1) }
        return page("dead", DeadLettersView(
            viewer: viewer, fields: fields, letters: Array(letters.prefix(Self.deadLetterPage)),
            more: letters.count > Self.deadLetterPage, notice: Notice(request)?.text))
    }

    func replayDeadLetters(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        let filter = try Self.filter(of: form)
        let replayed = try await audited(who, "dead.replay", target: filter.description, results: { ["replayed": "\($0)"] }) { desk in
            try desk.queue.replay(matching: filter)
        }
        logger.notice("console: replayed dead letters", metadata: ["operator": "\(who.name)", "filter": "\(filter)", "replayed": "\(replayed)"])
        return Self.redirect(to: "/console/dead?done=replayed&n=\(replayed)")
    }

    func purgeDeadLetters(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        guard form["confirm"] == "yes" else {
            throw ConsoleProblem.badRequest("Purging deletes dead letters for good: tick “I mean it” to confirm.")
        }
        let filter = try Self.filter(of: form)
        let purged = try await audited(who, "dead.purge", target: filter.description, results: { ["purged": "\($0)"] }) { desk in
            try desk.queue.purge(matching: filter)
        }
        logger.notice("console: purged dead letters", metadata: ["operator": "\(who.name)", "filter": "\(filter)", "purged": "\(purged)"])
        return Self.redirect(to: "/console/dead?done=purged&n=\(purged)")
    }

    /// One letter by its id, or the filter's fields (none: every letter).
    private static func filter(of form: Form) throws -> DeadLetterFilter {
        if let id = form["id"] {
            guard id.range(of: #"^[0-9]+-[0-9]+$"#, options: .regularExpression) != nil else {
                throw ConsoleProblem.badRequest("'\(id.prefix(40))' is not a dead letter's id.")
            }
            return DeadLetterFilter(ids: [id])
        }
        return try DeadLetterFields(errorClass: form["error_class"] ?? "", run: form["run"] ?? "", subscription: form["subscription"] ?? "").filter()
    }
}

/// The filter as typed, for the form and the bulk actions' hidden fields.
struct DeadLetterFields {
    var errorClass: String
    var run: String
    var subscription: String

    init(errorClass: String, run: String, subscription: String) {
        (self.errorClass, self.run, self.subscription) = (
            errorClass.trimmingCharacters(in: .whitespaces), run.trimmingCharacters(in: .whitespaces),
            subscription.trimmingCharacters(in: .whitespaces))
    }

    init(_ query: Hummingbird.Parameters) {
        self.init(errorClass: query["error_class"].map(String.init) ?? "", run: query["run"].map(String.init) ?? "",
                  subscription: query["subscription"].map(String.init) ?? "")
    }

    var isEmpty: Bool { errorClass.isEmpty && run.isEmpty && subscription.isEmpty }

    func filter() throws -> DeadLetterFilter {
        var subscriptions: Set<Int64>?
        if !subscription.isEmpty {
            guard let id = Int64(subscription), id > 0 else {
                throw ConsoleProblem.badRequest("A subscription id is a positive whole number, not '\(subscription.prefix(40))'.")
            }
            subscriptions = [id]
        }
        return DeadLetterFilter(errorClass: errorClass.isEmpty ? nil : errorClass, runID: run.isEmpty ? nil : run, subscriptionIDs: subscriptions)
    }
}

struct DeadLettersView {
    let title = "Dead letters"
    let onDead = true
    var operatorName: String
    var csrf: String
    var banners: [Banner]
    var notice: String?
    var filter: DeadLetterFields
    var summary: String
    var scope: String
    var hasLetters: Bool
    var letters: [Row]

    struct Row {
        var id: String
        var subscriptionID: Int64?
        var run: String
        var errorClass: String
        var message: String
        var attempts: Int
        var buried: String
    }

    init(viewer: OpsConsole.Operator, fields: DeadLetterFields, letters: [DeadLetter], more: Bool, notice: String?) {
        (operatorName, csrf, banners, self.notice, filter) = (viewer.name, viewer.csrf, viewer.banners, notice, fields)
        let matching = fields.isEmpty ? "" : " matching the filter"
        summary = letters.isEmpty ? "No dead letters\(matching)."
            : "\(more ? "The oldest \(letters.count)" : "\(letters.count)") dead letter\(letters.count == 1 && !more ? "" : "s")\(matching), oldest first."
        scope = fields.isEmpty ? "all" : "all matching"
        hasLetters = !letters.isEmpty
        self.letters = letters.map { letter in
            Row(id: letter.id, subscriptionID: letter.job?.subscriptionID, run: letter.job?.runID ?? "-",
                errorClass: letter.failure.errorClass, message: letter.failure.message, attempts: letter.attempts,
                buried: Shown.time(Date(timeIntervalSince1970: Double(letter.buriedAt) / 1000)))
        }
    }
}
