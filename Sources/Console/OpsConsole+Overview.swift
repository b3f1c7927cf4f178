import Fleet
import Foundation
import Hummingbird
import JobQueue

/// The overview, and pausing and resuming the fleet.
extension OpsConsole {
    func overview(_ request: Request) async throws -> Response {
        let viewer = try await viewer(request)
        let window = request.uri.queryParameters["window"].flatMap { ChartWindow(rawValue: String($0)) } ?? .hour
        let (now, interval) = (clock.now(), settings.sampleInterval)
        let (status, samples, minutes, nights) = try await lanes.run { desk in
            // The passes as their tallies say now: a finished pass's dead letters replayed later
            // are to go, then verified or dead again.
            let nights = try SchedulerPasses.nights(ledger: desk.ledger, queue: desk.queue, limit: OverviewView.nightsListed, now: now)
            return (try desk.status.read(.live).status(), try desk.store.samples(within: interval * ConsoleStore.Series.samplesKept),
                    try desk.store.samples(.minutes, within: window.duration), nights)
        }
        var view = OverviewView(status: status, samples: samples, minutes: minutes, window: window, now: now,
                                viewer: viewer, notice: Notice(request)?.text)
        view.nights = nights.map { OverviewView.NightRows($0, now: now) }
        return page("overview", view)
    }

    /// Halts the fleet, as `receiptfleet pause` does.
    func pause(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        let typed = (form["reason"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let reason = String((typed.isEmpty ? "paused from the console" : typed).prefix(200))
        try await audited(who, "fleet.pause", details: ["reason": reason]) { desk in try desk.gate.halt(reason: reason) }
        logger.notice("console: paused the fleet", metadata: ["operator": "\(who.name)", "reason": "\(reason)"])
        return Self.redirect(to: "/console?done=paused")
    }

    /// Lifts a pause at once; a halt (of the fleet, or of the form's `app` alone) only once the
    /// operator has confirmed it (the confirmation page names the halt's reason), as
    /// `receiptfleet resume [--app]` does.
    func resume(_ request: Request) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        let fleet = self.fleet
        let app = form["app"]
        do {
            if let app { _ = try fleet.apps.resolve(app) }
        } catch {
            throw ConsoleProblem.badRequest(error.description)
        }
        // A halt (not a pause, which ends by itself) is lifted only once confirmed, on a page that says what it was.
        if form["confirm"] != "yes", let halt = who.banners.first(where: { $0.canResume && $0.app == app }) {
            return page("confirm-resume", ConfirmResumeView(chrome: Chrome("Resume from a halt?", viewer: who), halt: halt))
        }
        let resumed = try await audited(who, "fleet.resume", target: app.map { "app:\($0)" }, results: \.results) { _ in
            try resumeFleet(settings: fleet, app: app)
        }
        logger.notice(app == nil ? "console: resumed the fleet" : "console: resumed one app",
                      metadata: ["operator": "\(who.name)", "app": "\(app ?? "all")", "replayed": "\(resumed.replayed)",
                                 "brought_forward": "\(resumed.broughtForward)"])
        return Self.redirect(to: "/console?done=resumed")
    }
}

struct ConfirmResumeView {
    let chrome: Chrome
    /// The halt to lift, explained as its banner explains it.
    var halt: Banner
}

/// What an action did, carried to the next page in the redirect's query as a fixed code and a
/// count, never as text: a link cannot make the console say anything else.
struct Notice {
    var text: String

    init?(_ request: Request) {
        let query = request.uri.queryParameters
        let count = query["n"].flatMap { Int($0) } ?? 0
        switch query["done"].map(String.init) {
        case "paused": text = "The fleet is paused: workers keep their jobs until you resume."
        case "resumed": text = "The fleet is running."
        case "replayed": text = "Replayed \(count) dead letter\(count == 1 ? "" : "s"): they are queued again."
        case "purged": text = "Purged \(count) dead letter\(count == 1 ? "" : "s")."
        case "verified": text = "Verified with Apple just now."
        case "not-verified": text = "Not verified: the fleet is paused or halted, or Apple did not answer usefully; see the verifications below."
        case "extended": text = "Apple extended the renewal date. Its check is queued: renewal_extended follows once a worker has verified it."
        case "extension-refused": text = "Apple refused the extension; the audit trail says why."
        case "already-confirmed": text = "That confirmation was already sent: the action was done once, not again."
        case let done? where done.hasPrefix("waiting-"):
            guard let action = WaitingJobAction(rawValue: String(done.dropFirst("waiting-".count))) else { return nil }
            text = "\(count) waiting job\(count == 1 ? "" : "s") \(action.done)."
        default: return nil
        }
    }
}
