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
        let (processes, stats, delayed) = try await lanes.run { desk in
            (try desk.queue.processes(), try desk.queue.stats(),
             try desk.queue.delayedJobs(offset: offset, limit: Self.delayedPage))
        }
        var view = WorkersView(
            viewer: viewer, processes: processes, visibilityTimeout: fleet.visibilityTimeout, stats: stats, delayed: delayed, offset: offset,
            now: Date())
        view.notice = Notice(request)?.text
        return page("workers", view)
    }

    /// Retries now, deletes or buries the waiting jobs ticked on the workers page, once the
    /// operator confirmed how many (`confirm-waiting`).
    func actOnWaiting(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        guard let action = form["action"].flatMap(WaitingJobAction.init(rawValue:)) else {
            throw ConsoleProblem.badRequest("Choose what to do: retry, delete or bury.")
        }
        let texts = form.values("job")
        guard (1...Self.delayedPage).contains(texts.count) else {
            throw ConsoleProblem.badRequest("Tick from 1 to \(Self.delayedPage) waiting jobs to act on.")
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
}

/// The question before acting on waiting jobs: what, to how many, and what follows.
struct ConfirmWaitingView {
    let chrome: Chrome
    var action: String
    var jobs: [String]
    var question: String
    var button: String

    init(chrome: Chrome, action: WaitingJobAction, jobs: [Job]) {
        (self.chrome, self.action, self.jobs) = (chrome, action.rawValue, jobs.map(\.encoded))
        let count = jobs.count == 1 ? "1 waiting job" : "\(jobs.count) waiting jobs"
        let ids = jobs.prefix(10).map { String($0.subscriptionID) }.joined(separator: ", ") + (jobs.count > 10 ? ", …" : "")
        (question, button) = switch action {
        case .retryNow: ("Retry \(count) now (subscriptions \(ids))? Each keeps its attempts and goes to the ready queue within a second.",
                         "Retry \(count) now")
        case .delete: ("Delete \(count) (subscriptions \(ids))? This occurrence only: a subscription's next sweep queues it again when it is due.",
                       "Delete \(count)")
        case .bury: ("Send \(count) to the dead letters (subscriptions \(ids))? They can be replayed or purged there.",
                     "Send \(count) to the dead letters")
        }
    }
}

struct WorkersView {
    let chrome: Chrome
    var notice: String?
    var processes: [Process]
    var hasProcesses: Bool
    var delayedSummary: String
    var delayed: [Delayed]
    var hasDelayed: Bool
    var nextPage: String?
    var previousPage: String?

    struct Process {
        var name: String
        var host: String
        var pid: Int
        var threads: Int
        var started: String
        var lastSeen: String
        /// Set when its heartbeat is late: what that means, and what becomes of the jobs it holds.
        var silent: String?
        var jobsDone: String
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
        offset: Int, now: Date
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
                lastSeen: ago(process.lastSeen), silent: silent, jobsDone: Shown.count(process.jobsDone),
                inHand: Array(subscriptions.prefix(Self.inHandShown)), inHandMore: more > 0 ? "and \(more) more" : nil)
        }
        hasProcesses = !processes.isEmpty
        let total = stats.delayedDue + stats.delayedLater
        delayedSummary = total == 0 ? "No job waits for a time."
            : "\(Shown.count(total)) job\(total == 1 ? " waits" : "s wait") for a time (\(Shown.count(stats.delayedDue)) due, being moved back to the ready streams); "
              + (delayed.isEmpty ? "none from here." : "\(offset + 1)–\(offset + delayed.count), the soonest due first.")
        self.delayed = delayed.map { item in
            let due = item.dueAt <= nowMs ? "due \(ago(item.dueAt))"
                : "in \(Shown.duration(Double(item.dueAt - nowMs) / 1000))"
            return Delayed(
                subscriptionID: item.job?.subscriptionID, isJob: item.job != nil, text: item.text, reason: item.job.map { "\($0.reason)" } ?? "not a job",
                tries: Self.tries(of: item.job), due: due)
        }
        hasDelayed = !delayed.isEmpty
        nextPage = offset + delayed.count < total && delayed.count == OpsConsole.delayedPage
            ? "/console/workers?from=\(offset + OpsConsole.delayedPage)" : nil
        previousPage = offset > 0 ? "/console/workers?from=\(max(0, offset - OpsConsole.delayedPage))" : nil
    }
}
