import Fleet
import Foundation
import JobQueue
import Ledger

/// The line at the top of every page while something stops the fleet from calling Apple: what is
/// stopped, by whom, since when, why, and what to do next. Nobody should have to scroll to learn
/// that the fleet is halted.
struct Banner {
    var id: String
    /// "halted" (red) or "paused" (amber).
    var stateClass: String
    var what: String
    var why: String
    var next: String
    /// The app a resume button lifts alone; nil for the whole fleet; no button when `canResume` is false.
    var app: String?
    var canResume: Bool
    /// A halt the fleet called itself (a configuration error), which it calls again if resumed before
    /// the cause is fixed; an operator's pause is not.
    var haltsAgainIfEarly = true

    /// The banners for `standing`; `pausedBy` is the operator whose recorded pause is the fleet's halt.
    static func all(_ standing: GateStanding, pausedBy: AuditEntry?, now: Date) -> [Banner] {
        var banners: [Banner] = []
        if let halt = standing.fleet {
            let byOperator = pausedBy.map { "by \($0.actor) (\($0.via.rawValue))" }
            banners.append(Banner(
                halted: halt, id: "banner-fleet",
                what: "The fleet is halted \(byOperator ?? "by itself") \(since(halt, now: now)): no worker calls Apple; jobs wait, none is lost.",
                next: byOperator != nil
                    ? "An operator paused it: resume once the reason no longer holds."
                    : "Fix what the reason names (the configuration, not Apple), then resume; `receiptfleet status` shows the same.",
                haltsAgainIfEarly: byOperator == nil))
        } else if let until = standing.pausedUntil {
            let end = Date(timeIntervalSince1970: Double(until) / 1000)
            banners.append(Banner(
                id: "banner-paused", stateClass: "paused",
                what: end > now ? "The fleet is paused until \(Shown.time(end)): Apple is unavailable." : "The fleet's pause is over: one worker is testing whether Apple is back.",
                why: "Apple answered unavailable (21005, 5xx or no answer) several times in a row.",
                next: "Nothing to do: it resumes by itself when a probe succeeds, and each failed probe pauses a little longer.",
                app: nil, canResume: false))
        }
        for (group, halt) in standing.groups.sorted(by: { $0.key < $1.key }) {
            banners.append(Banner(
                halted: halt, id: "banner-\(group)",
                what: "The App Store Server API is halted \(since(halt, now: now)): its subscriptions wait; verifyReceipt goes on.",
                next: "Fix the key or the app named (issuer, key id, bundle id), then resume."))
        }
        for (app, halt) in standing.apps.sorted(by: { $0.key < $1.key }) {
            banners.append(Banner(
                halted: halt, id: "banner-app-\(app)",
                what: "The app \(app) is halted \(since(halt, now: now)): its subscriptions wait; the other apps go on.",
                next: "Fix \(app)'s shared secret in the configuration, then resume \(app).", app: app))
        }
        return banners
    }

    private static func since(_ halt: GateStanding.Halt, now: Date) -> String {
        guard let ms = halt.since else { return "(since before this release noted when)" }
        let at = Date(timeIntervalSince1970: Double(ms) / 1000)
        return "since \(Shown.time(at)) (\(Shown.duration(max(0, now.timeIntervalSince(at)))) ago)"
    }
}

extension Banner {
    /// A halt's banner, red: its reason is the why, and an operator may resume (`app` alone, or the fleet).
    private init(
        halted halt: GateStanding.Halt, id: String, what: String, next: String, app: String? = nil, haltsAgainIfEarly: Bool = true
    ) {
        self.init(id: id, stateClass: "halted", what: what, why: halt.reason, next: next, app: app, canResume: true,
                  haltsAgainIfEarly: haltsAgainIfEarly)
    }
}
