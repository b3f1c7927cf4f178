import AppStore
import Foundation
import Hummingbird
import JobQueue

/// Dead letters: the list with filters like `receiptfleet dead list`, replay and purge (one, a filter, all).
extension OpsConsole {
    static let deadLetterPage = 100

    func deadLetters(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let fields = try Self.fields(of: Form(query: request))
        let filter = try fields.filter()
        let after = try request.uri.queryParameters["after"].map { try Self.letterID(String($0)) }
        let (counts, letters) = try await lanes.run { desk in
            (try desk.queue.countDeadLetters(matching: filter),
             try desk.queue.deadLetters(matching: filter, after: after, limit: Self.deadLetterPage + 1))
        }
        return page("dead", DeadLettersView(
            viewer: viewer, fields: fields, counts: counts, after: after, letters: Array(letters.prefix(Self.deadLetterPage)),
            more: letters.count > Self.deadLetterPage, notice: Notice(request)?.text))
    }

    /// A dead letter's id (a stream entry id), or a 400 naming what was given.
    /// A stream entry's id, MS-SEQ, each part a number Redis holds (64 bits): Redis answers any
    /// other an error.
    private static func letterID(_ text: String) throws -> String {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && UInt64($0) != nil }) else {
            throw ConsoleProblem.badRequest("'\(text.prefix(40))' is not a dead letter's id.")
        }
        return text
    }

    /// Replays one letter at once; the ticked ones or a filter's only once the operator confirmed how
    /// many (`confirm-replay`).
    func replayDeadLetters(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        let filter = try Self.filter(of: form)
        if form.values("id").count != 1, form["confirm"] != "yes" {
            let matching = try await lanes.run { desk in try desk.queue.countDeadLetters(matching: filter).matching }
            return page("confirm-replay", ConfirmReplayView(
                chrome: Chrome("Replay dead letters?", viewer: who), filter: Self.fields(of: form), ids: form.values("id"), count: matching))
        }
        let replayed = try await audited(who, "dead.replay", target: filter.description, results: { ["replayed": "\($0)"] }) { desk in
            try desk.queue.replay(matching: filter)
        }
        logger.notice("console: replayed dead letters", metadata: ["operator": "\(who.name)", "filter": "\(filter)", "replayed": "\(replayed)"])
        return Self.redirect(to: "/console/dead?done=replayed&n=\(replayed)")
    }

    func purgeDeadLetters(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        let filter = try Self.filter(of: form)
        guard form["confirm"] == "yes" else {
            guard !form.values("id").isEmpty else {
                throw ConsoleProblem.badRequest("Purging deletes dead letters for good: tick “I mean it” to confirm.")
            }
            let matching = try await lanes.run { desk in try desk.queue.countDeadLetters(matching: filter).matching }
            return page("confirm-replay", ConfirmReplayView(
                chrome: Chrome("Purge dead letters?", viewer: who), filter: Self.fields(of: form), ids: form.values("id"), count: matching, purge: true))
        }
        let purged = try await audited(who, "dead.purge", target: filter.description, results: { ["purged": "\($0)"] }) { desk in
            try desk.queue.purge(matching: filter)
        }
        logger.notice("console: purged dead letters", metadata: ["operator": "\(who.name)", "filter": "\(filter)", "purged": "\(purged)"])
        return Self.redirect(to: "/console/dead?done=purged&n=\(purged)")
    }

    /// The most letters ticked at once: a page's.
    static let mostTicked = deadLetterPage

    /// The letters ticked (one or several, by id), or the filter's fields (none: every letter).
    private static func filter(of form: Form) throws -> DeadLetterFilter {
        let ids = form.values("id")
        if !ids.isEmpty {
            guard ids.count <= Self.mostTicked else { throw ConsoleProblem.badRequest("Tick at most \(Self.mostTicked) dead letters at once.") }
            return DeadLetterFilter(ids: Set(try ids.map(letterID)))
        }
        return try fields(of: form).filter()
    }

    static func fields(of form: Form) -> DeadLetterFields {
        DeadLetterFields(
            errorClass: form["error_class"] ?? "", run: form["run"] ?? "", subscription: form["subscription"] ?? "", text: form["q"] ?? "")
    }
}

/// The question before a bulk replay (or purge of ticked letters): how many letters, ticked or of which filter.
struct ConfirmReplayView {
    let chrome: Chrome
    var filter: DeadLetterFields
    /// The ticked letters' ids; empty for a filter's.
    var ids: [String]
    var count: Int
    var question: String
    var action: String
    var button: String

    init(chrome: Chrome, filter: DeadLetterFields, ids: [String] = [], count: Int, purge: Bool = false) {
        (self.chrome, self.filter, self.ids, self.count) = (chrome, filter, ids, count)
        let letters = count == 1 ? "1 dead letter" : "\(Shown.count(count)) dead letters"
        let which = !ids.isEmpty ? " (the ticked ones)" : filter.isEmpty ? "" : " matching \(filter.described)"
        (action, button) = purge ? ("/console/dead/purge", "Purge \(letters)") : ("/console/dead/replay", "Replay \(letters)")
        question = purge ? "Purge \(letters)\(which)? They are deleted for good."
            : "Replay \(letters)\(which)? Each goes back to the ready queue as a fresh job (attempt 0); a subscription already queued again keeps its one job."
    }
}

/// The filter as typed, for the form and the bulk actions' hidden fields.
struct DeadLetterFields {
    var errorClass: String
    var run: String
    var subscription: String
    /// Text to find in the letter's message, error class or job (the form's `q`).
    var text: String

    /// The longest text searched for: a message is at most a few hundred characters.
    static let longestText = 200

    init(errorClass: String, run: String, subscription: String, text: String = "") {
        (self.errorClass, self.run, self.subscription, self.text) = (
            errorClass.trimmingCharacters(in: .whitespaces), run.trimmingCharacters(in: .whitespaces),
            subscription.trimmingCharacters(in: .whitespaces), text.trimmingCharacters(in: .whitespaces))
    }

    var isEmpty: Bool { errorClass.isEmpty && run.isEmpty && subscription.isEmpty && text.isEmpty }

    /// The filter in words: "error class apple.21002, run 2026-11-24, text “timeout”".
    var described: String {
        [("error class", errorClass), ("run", run), ("subscription", subscription), ("text", text.isEmpty ? "" : "“\(text)”")]
            .filter { !$0.1.isEmpty }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
    }

    func filter() throws -> DeadLetterFilter {
        var subscriptions: Set<Int64>?
        if !subscription.isEmpty {
            guard let id = Int64(subscription), id > 0 else {
                throw ConsoleProblem.badRequest("A subscription id is a positive whole number, not '\(subscription.prefix(40))'.")
            }
            subscriptions = [id]
        }
        guard text.utf8.count <= Self.longestText else {
            throw ConsoleProblem.badRequest("Search for at most \(Self.longestText) bytes of text.")
        }
        return DeadLetterFilter(
            errorClass: errorClass.isEmpty ? nil : errorClass, runID: run.isEmpty ? nil : run, subscriptionIDs: subscriptions,
            text: text.isEmpty ? nil : text)
    }
}

struct DeadLettersView {
    let chrome: Chrome
    var notice: String?
    var filter: DeadLetterFields
    /// Every letter's kind (error class) with its count, each with its own replay.
    var kinds: [Kind]
    let pageSize = OpsConsole.deadLetterPage
    var summary: String
    var scope: String
    var letters: [Row]
    /// Links to the next page (past this one's last letter) and back to the first.
    var nextPage: String?
    var firstPage: String?

    struct Kind {
        var errorClass: String
        var meaning: String
        var count: String
        var link: String
        /// Its replay button's words: the kind's count, or, under a night, subscription or text
        /// filter (which the replay keeps), those the filter matches (the confirmation counts them).
        var replay: String
    }

    struct Row {
        var id: String
        var subscriptionID: Int64?
        var run: String
        var errorClass: String
        var message: String
        var attempts: Int
        var buried: String
        var firstFailed: String
        var lastFailed: String
        /// The job's text as stored.
        var job: String
    }

    init(viewer: OpsConsole.Operator, fields: DeadLetterFields, counts: DeadLetterCounts, after: String?, letters: [DeadLetter], more: Bool,
         notice: String?) {
        (chrome, self.notice, filter) = (Chrome("Dead letters", tab: .dead, viewer: viewer), notice, fields)
        let narrowed = !(fields.run.isEmpty && fields.subscription.isEmpty && fields.text.isEmpty)
        kinds = counts.byKind.map { errorClass, count in
            Kind(errorClass: errorClass, meaning: Self.meaning(of: errorClass), count: Shown.count(count),
                 link: Self.link(DeadLetterFields(errorClass: errorClass, run: fields.run, subscription: fields.subscription, text: fields.text)),
                 replay: narrowed ? "Replay those matching…" : "Replay \(Shown.count(count))")
        }
        let matching = fields.isEmpty ? "" : " matching the filter"
        let total = fields.isEmpty ? counts.total : counts.matching
        if letters.isEmpty {
            summary = after == nil ? "No dead letters\(matching)." : "No more dead letters\(matching)."
        } else {
            let shown = after == nil ? "\(letters.count == total ? "All" : "The oldest \(letters.count) of") \(Shown.count(total))"
                : "\(letters.count) more of \(Shown.count(total))"
            summary = "\(shown) dead letter\(total == 1 ? "" : "s")\(matching), oldest first."
        }
        scope = fields.isEmpty ? "all" : "all matching"
        self.letters = letters.map { letter in
            Row(id: letter.id, subscriptionID: letter.job?.subscriptionID, run: letter.job?.runID ?? "-",
                errorClass: letter.failure.errorClass, message: letter.failure.message, attempts: letter.attempts,
                buried: Shown.time(letter.buried), firstFailed: Self.time(letter.firstFailure), lastFailed: Self.time(letter.lastFailure),
                job: letter.jobText)
        }
        nextPage = more ? letters.last.map { Self.link(fields, after: $0.id) } : nil
        firstPage = after == nil ? nil : Self.link(fields)
    }

    private static func time(_ ms: Int64) -> String {
        ms > 0 ? Shown.time(Date(timeIntervalSince1970: Double(ms) / 1000)) : "–"
    }

    /// The page of `fields`' letters, from the first or after `after`.
    private static func link(_ fields: DeadLetterFields, after: String? = nil) -> String {
        var query = URLComponents()
        query.queryItems = [("error_class", fields.errorClass), ("run", fields.run), ("subscription", fields.subscription), ("q", fields.text),
                            ("after", after ?? "")]
            .filter { !$0.1.isEmpty }.map { URLQueryItem(name: $0.0, value: $0.1) }
        return "/console/dead" + (query.queryItems!.isEmpty ? "" : "?" + (query.percentEncodedQuery ?? ""))
    }

    /// What a kind means: Apple's status for "apple.NNNNN", else the queue's own kinds.
    private static func meaning(of errorClass: String) -> String {
        let (kind, detail) = errorClass.firstIndex(of: ".").map { (errorClass[..<$0], String(errorClass[$0...].dropFirst())) }
            ?? (errorClass[...], "")
        return switch kind {
        case "apple": AppleStatusMeaning.of(detail)
        case "http": "HTTP \(detail) with no answer that could be read"
        case "server_api": "the App Store Server API: \(detail.replacingOccurrences(of: "_", with: " "))"
        case "no_receipt": "no receipt is stored for the subscription"
        case "stale": "the subscription changed under the write, again and again"
        case "database": "PostgreSQL failed the write, attempt after attempt"
        case "timeout": "Apple did not answer in time, attempt after attempt"
        case Substring(JobFailure.stalled): "delivered again and again without an ack: its worker kept dying on it"
        case Substring(JobFailure.undecodable): "not a job: the entry could not be read"
        case "operator": "an operator sent it here from the jobs waiting for a time"
        default: ""
        }
    }
}
