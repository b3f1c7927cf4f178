import Fleet
import Foundation
import Hummingbird
import JobQueue
import Operations

/// The fleet's worker processes and what each holds now (Sidekiq's Busy page), and the jobs that
/// wait for a time: retries, jobs a pause postponed, checks scheduled for later.
extension OpsConsole {
    /// The furthest a page of waiting jobs may start: beyond any queue this fleet holds.
    static let largestOffset = 100_000_000

    static let delayedPage = 100

    func workers(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let offset = try request.uri.queryParameters["from"].map { text -> Int in
            guard let offset = Int(text), (0...Self.largestOffset).contains(offset) else {
                throw ConsoleProblem.badRequest("'\(text.prefix(40))' is not a place in the list: a whole number from 0 to \(Self.largestOffset).")
            }
            return offset
        } ?? 0
        let fields = WaitingFields(try Form(query: request))
        let filter = try fields.filter()
        let (processes, stats, delayed, complete) = try await lanes.run { desk in
            let (delayed, complete) = filter.isEmpty ? (try desk.queue.delayedJobs(offset: offset, limit: Self.delayedPage), true)
                : try desk.queue.delayedJobs(matching: filter, offset: offset, limit: Self.delayedPage)
            return (try desk.queue.processes(), try desk.queue.stats(), delayed, complete)
        }
        var view = WorkersView(
            viewer: viewer, processes: processes, visibilityTimeout: fleet.visibilityTimeout, stats: stats, delayed: delayed, offset: offset,
            filter: fields, lookedThroughAll: complete, now: clock.now())
        view.notice = Notice(request)?.text
        return page("workers", view)
    }

    /// Retries now, deletes or buries the waiting jobs ticked on the workers page, or all that match
    /// its filter (`scope` all), once the operator confirmed how many (`confirm-waiting`).
    func actOnWaiting(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        guard let action = form["action"].flatMap(WaitingJobAction.init(rawValue:)) else {
            throw ConsoleProblem.badRequest("Choose what to do: retry, delete or bury.")
        }
        if form["scope"] == "all" { return try await actOnAllWaiting(action, who: who, form: form) }
        let texts = form.values("job")
        guard (1...Self.delayedPage).contains(texts.count) else {
            throw ConsoleProblem.badRequest("Tick from 1 to \(Self.delayedPage) waiting jobs to act on, or act on all that match the filter.")
        }
        let jobs = try texts.map { text in
            guard let job = try? Job(encoded: text) else { throw ConsoleProblem.badRequest("'\(text.prefix(40))' is not a job.") }
            return job
        }
        guard form["confirm"] == "yes" else {
            return page("confirm-waiting", ConfirmWaitingView(chrome: Chrome("Act on waiting jobs?", viewer: who), action: action, jobs: jobs))
        }
        let subscriptions = jobs.map { String($0.subscriptionID) }.joined(separator: " ")
        let acted = try await audited(
            who, "jobs.\(action.rawValue)", target: "\(jobs.count) waiting jobs", details: ["subscriptions": String(subscriptions.prefix(1_000))],
            results: { ["acted": "\($0)"] }
        ) { desk in try desk.queue.act(action, onWaiting: jobs, by: who.name) }
        logger.notice("console: acted on waiting jobs", metadata: ["operator": "\(who.name)", "action": "\(action)", "acted": "\(acted)"])
        return Self.redirect(to: "/console/workers?done=waiting-\(action.rawValue)&n=\(acted)")
    }

    /// Every waiting job the filter matches: counted for the question, then acted on a few hundred at a
    /// time (`JobQueue.act(_:onWaitingMatching:by:)`), however many they are.
    private func actOnAllWaiting(_ action: WaitingJobAction, who: Operator, form: Form) async throws -> Response {
        let fields = WaitingFields(form)
        let filter = try fields.filter()
        guard form["confirm"] == "yes" else {
            let count = try await lanes.run { desk in try desk.queue.countWaiting(matching: filter) }
            return page("confirm-waiting", ConfirmWaitingView(
                chrome: Chrome("Act on waiting jobs?", viewer: who), action: action, matching: fields, count: count))
        }
        let target = "all waiting jobs" + (filter.isEmpty ? "" : " \(filter)")
        let acted = try await audited(
            who, "jobs.\(action.rawValue)", target: target, details: ["confirmed": String((form["count"] ?? "").prefix(20))],
            results: { ["acted": "\($0)"] }
        ) { desk in try desk.queue.act(action, onWaitingMatching: filter, by: who.name) }
        logger.notice("console: acted on all waiting jobs of a filter",
                      metadata: ["operator": "\(who.name)", "action": "\(action)", "filter": "\(filter)", "acted": "\(acted)"])
        return Self.redirect(to: "/console/workers?done=waiting-\(action.rawValue)&n=\(acted)")
    }
}

/// The filter of waiting jobs as typed, for the form, the links and the bulk actions' hidden fields.
struct WaitingFields {
    /// A reason's name ("nightly"), or "" for any.
    var reason: String
    var run: String
    /// "retried", "not-tried", or "" for both.
    var tries: String

    init(reason: String = "", run: String = "", tries: String = "") {
        (self.reason, self.run, self.tries) = (reason.trimmingCharacters(in: .whitespaces), run.trimmingCharacters(in: .whitespaces), tries)
    }

    init(_ form: Form) {
        self.init(reason: form["reason"] ?? "", run: form["run"] ?? "", tries: form["tries"] ?? "")
    }

    var isEmpty: Bool { reason.isEmpty && run.isEmpty && tries.isEmpty }

    /// The filter in words: "reason nightly, run 2026-11-28, retries only".
    var described: String {
        [reason.isEmpty ? nil : "reason \(reason)", run.isEmpty ? nil : "run \(run)",
         tries == "retried" ? "retries only" : tries == "not-tried" ? "not tried yet" : nil].compactMap(\.self).joined(separator: ", ")
    }

    func filter() throws -> WaitingJobFilter {
        var filter = WaitingJobFilter()
        if !reason.isEmpty {
            guard let reason = Job.Reason(name: reason) else {
                throw ConsoleProblem.badRequest("'\(reason.prefix(40))' is not a reason: one of \(Job.Reason.allCases.map { "\($0)" }.joined(separator: ", ")).")
            }
            filter.reason = reason
        }
        if !run.isEmpty {
            guard run.utf8.count <= 64, !run.contains("|") else { throw ConsoleProblem.badRequest("A run id is at most 64 bytes, without '|'.") }
            filter.runID = run
        }
        switch tries {
        case "": break
        case "retried": filter.retried = true
        case "not-tried": filter.retried = false
        default: throw ConsoleProblem.badRequest("'\(tries.prefix(40))' is neither retried nor not-tried.")
        }
        return filter
    }

    /// The query that selects this filter on the workers page, with `from` when given: "reason=nightly&from=100".
    func query(from offset: Int? = nil) -> String {
        var query = URLComponents()
        query.queryItems = [("reason", reason), ("run", run), ("tries", tries), ("from", offset.map(String.init) ?? "")]
            .filter { !$0.1.isEmpty }.map { URLQueryItem(name: $0.0, value: $0.1) }
        return query.percentEncodedQuery ?? ""
    }

    /// The reasons for the form's menu, the chosen one selected.
    var reasons: [Choice] {
        [Choice(value: "", label: "any", selected: reason.isEmpty)]
            + Job.Reason.allCases.map { Choice(value: "\($0)", label: "\($0)", selected: reason == "\($0)") }
    }

    var triesChoices: [Choice] {
        [("", "retried or not"), ("retried", "retries only"), ("not-tried", "not tried yet")].map { Choice(value: $0.0, label: $0.1, selected: tries == $0.0) }
    }

    struct Choice {
        var value: String
        var label: String
        var selected: Bool
    }
}

/// The question before acting on waiting jobs: what, to how many, and what follows. Ticked jobs
/// travel as their texts; all of a filter as the filter, with the count the operator was shown.
struct ConfirmWaitingView {
    let chrome: Chrome
    var action: String
    var jobs: [String]
    var matching: WaitingFields?
    var count: Int
    var question: String
    var button: String?

    init(chrome: Chrome, action: WaitingJobAction, jobs: [Job]) {
        (self.chrome, self.action, self.jobs, matching, count) = (chrome, action.rawValue, jobs.map(\.encoded), nil, jobs.count)
        let ids = jobs.prefix(10).map { String($0.subscriptionID) }.joined(separator: ", ") + (jobs.count > 10 ? ", …" : "")
        (question, button) = Self.question(action, count: jobs.count, which: " (subscriptions \(ids))")
    }

    init(chrome: Chrome, action: WaitingJobAction, matching fields: WaitingFields, count: Int) {
        (self.chrome, self.action, jobs, matching, self.count) = (chrome, action.rawValue, [], fields, count)
        let which = fields.isEmpty ? "" : " matching \(fields.described)"
        if count == 0 {
            (question, button) = ("No waiting job\(which): nothing to do.", nil)
        } else {
            (question, button) = Self.question(action, count: count, which: which.isEmpty ? " (all of them)" : which)
            question += " They are changed a few hundred at a time; jobs that come or go meanwhile may make the number differ a little."
        }
    }

    private static func question(_ action: WaitingJobAction, count: Int, which: String) -> (String, String) {
        let jobs = count == 1 ? "1 waiting job" : "\(Shown.count(count)) waiting jobs"
        return switch action {
        case .retryNow: ("Retry \(jobs) now\(which)? Each keeps its attempts and goes to the ready queue within a second.", "Retry \(jobs) now")
        case .delete: ("Delete \(jobs)\(which)? This occurrence only: a subscription's next sweep queues it again when it is due.", "Delete \(jobs)")
        case .bury: ("Send \(jobs) to the dead letters\(which)? They can be replayed or purged there.", "Send \(jobs) to the dead letters")
        }
    }
}

struct WorkersView {
    let chrome: Chrome
    var notice: String?
    var processes: [Process]
    var delayedSummary: String
    var filter: WaitingFields
    /// "all", or "all matching": what the bulk actions take.
    var scope: String
    /// The filter form's menus (the template reads stored properties only).
    var reasons: [WaitingFields.Choice]
    var triesChoices: [WaitingFields.Choice]
    var delayed: [Delayed]
    /// Whether anything waits at all: the bulk actions are offered then, whatever this page shows.
    var anyWaiting: Bool
    var nextPage: String?
    var previousPage: String?

    struct Process {
        /// As the queue names its consumers: host, pid and a random part.
        var name: String
        var host: String
        var pid: Int
        /// Its processors (`concurrency`).
        var threads: Int
        var started: String
        /// Its last heartbeat, by Redis's clock.
        var lastSeen: String
        /// Set when its heartbeat is late: what that means, and what becomes of the jobs it holds.
        var silent: String?
        var jobsDone: String
        var holdsJobs: Bool
        var inHand: [Int64]
        var inHandMore: String?
    }

    struct Delayed {
        var subscriptionID: Int64?
        /// Whether it can be acted on: an entry that is not a job cannot.
        var isJob: Bool
        var text: String
        var reason: String
        /// "not tried yet" (a pause postponed it, or a check waits for its time), or its attempt and first failure.
        var tries: String
        var due: String
    }

    private static func tries(of job: Job?) -> String {
        guard let job, job.attempt > 0 else { return "not tried yet" }
        let first = job.firstFailedAt.map { ", first failed \(Shown.time(Date(timeIntervalSince1970: Double($0) / 1000)))" } ?? ""
        return "attempt \(job.attempt)\(first)"
    }

    /// Subscriptions listed per process; the rest are counted.
    static let inHandShown = 20

    init(
        viewer: OpsConsole.Operator, processes: [WorkerProcess], visibilityTimeout: Duration, stats: QueueStats, delayed: [DelayedJob],
        offset: Int, filter: WaitingFields = WaitingFields(), lookedThroughAll: Bool = true, now: Date
    ) {
        chrome = Chrome("Workers", tab: .workers, viewer: viewer)
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        func ago(_ ms: Int64) -> String { "\(Shown.duration(Double(max(0, nowMs - ms)) / 1000)) ago" }
        self.processes = processes.map { process in
            let subscriptions = process.inHand.map(\.job.subscriptionID)
            let more = subscriptions.count - Self.inHandShown
            let silent = process.silentFor < Heartbeat.silentAfter ? nil
                : "Silent for \(Shown.duration(process.silentFor.seconds)): stopped, frozen, cut off from Redis or dead. It holds "
                    + FleetStatus.SilentWorker(process, visibilityTimeout: visibilityTimeout).held + "."
            return Process(
                name: process.name, host: process.host, pid: process.pid, threads: process.threads,
                started: "\(Shown.time(Date(timeIntervalSince1970: Double(process.startedAt) / 1000))) (\(ago(process.startedAt)))",
                // By Redis's clock, as its silence is judged (the console's host may be skewed).
                lastSeen: "\(Shown.duration(process.silentFor.seconds)) ago", silent: silent, jobsDone: Shown.count(process.jobsDone),
                holdsJobs: !subscriptions.isEmpty, inHand: Array(subscriptions.prefix(Self.inHandShown)), inHandMore: more > 0 ? "and \(more) more" : nil)
        }
        let total = stats.delayedDue + stats.delayedLater
        let waiting = "\(Shown.count(total)) job\(total == 1 ? " waits" : "s wait") for a time (\(Shown.count(stats.delayedDue)) due, being moved back to the ready streams); "
        if total == 0 {
            delayedSummary = "No job waits for a time."
        } else if filter.isEmpty {
            delayedSummary = waiting + (delayed.isEmpty ? "none from here." : "\(offset + 1)–\(offset + delayed.count), the soonest due first.")
        } else {
            let looked = lookedThroughAll ? "" : " (looked through the \(Shown.count(JobQueue.waitingScanLimit)) soonest due)"
            delayedSummary = waiting + (delayed.isEmpty ? "none matching \(filter.described) from here\(looked)."
                : "matching \(filter.described): \(offset + 1)–\(offset + delayed.count), the soonest due first\(looked).")
        }
        (self.filter, scope, anyWaiting) = (filter, filter.isEmpty ? "all" : "all matching", total > 0)
        (reasons, triesChoices) = (filter.reasons, filter.triesChoices)
        self.delayed = delayed.map { item in
            let due = item.dueAt <= nowMs ? "due \(ago(item.dueAt))"
                : "in \(Shown.duration(Double(item.dueAt - nowMs) / 1000))"
            return Delayed(
                subscriptionID: item.job?.subscriptionID, isJob: item.job != nil, text: item.text, reason: item.job.map { "\($0.reason)" } ?? "not a job",
                tries: Self.tries(of: item.job), due: due)
        }
        nextPage = offset + delayed.count < total && delayed.count == OpsConsole.delayedPage
            ? "/console/workers?" + filter.query(from: offset + OpsConsole.delayedPage) : nil
        previousPage = offset > 0 ? "/console/workers?" + filter.query(from: max(0, offset - OpsConsole.delayedPage)) : nil
    }
}
