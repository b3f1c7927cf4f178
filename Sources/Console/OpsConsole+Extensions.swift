import AppStore
import Fleet
import FleetConfiguration
import Foundation
import Lanes
import Hummingbird
import Ledger
import Operations

/// Extending a subscription's renewal date, as `receiptfleet subscriptions extend ID --yes` does:
/// the form's days and reason first lead to a page that says what Apple will be asked (or why
/// the ledger says Apple would refuse), and only that page's confirmation asks Apple.
extension OpsConsole {
    func extend(_ request: Request, id text: String) async throws -> Response {
        let (who, form) = try await operatorActing(request)
        guard let id = Int64(text), id > 0 else { throw ConsoleProblem.notFound("'\(text.prefix(40))' is not a subscription id.") }
        guard let days = form["days"].flatMap({ Int($0) }), RenewalExtension.days.contains(days) else {
            throw ConsoleProblem.badRequest("Days must be a whole number from 1 to 90: Apple extends by at most 90 days at a time.")
        }
        guard let reason = form["reason"].flatMap(ExtendReason.init(name:)) else {
            throw ConsoleProblem.badRequest("Choose a reason: \(ExtendReason.allCases.map(\.name).joined(separator: ", ")).")
        }
        let (fleet, metrics, clock) = (self.fleet, self.metrics, self.clock)
        let candidate: ExtensionCandidate = try await lanes.run { _ in
            guard let candidate = try Self.extender(fleet, metrics, clock).candidates(ids: [id]).first else {
                throw ConsoleProblem.notFound("No subscription has id \(id).")
            }
            return candidate
        }
        guard form["confirm"] == "yes" else {
            let confirmation = try await lanes.run { desk in try desk.store.issueConfirmation(lifetime: Self.confirmationLifetime) }
            return page("confirm-extend", ConfirmExtendView(
                who: who, candidate: candidate, days: days, reason: reason, confirmation: confirmation))
        }
        if let why = candidate.ineligible { throw ConsoleProblem.badRequest("Subscription \(id) cannot be extended: \(why).") }
        // Apple allows two extensions a year: a confirmation sent twice asks once.
        let token = form["confirmation"] ?? ""
        guard try await lanes.run({ desk in try desk.store.useConfirmation(token) }) else {
            return Self.redirect(to: "/console/subscriptions/\(id)?done=already-confirmed")
        }
        let outcome = try await audited(
            who, "subscriptions.extend", target: "subscription \(id)", details: ["days": "\(days)", "reason": reason.name],
            results: { ["result": "\($0)"] }
        ) { _ in try Self.extender(fleet, metrics, clock).extend(candidate, days: days, reason: reason) }
        logger.notice("console: extended a renewal date", metadata: [
            "operator": "\(who.name)", "subscription": "\(id)", "days": "\(days)", "result": "\(outcome)",
        ])
        let extended = if case .extended = outcome { true } else { false }
        return Self.redirect(to: "/console/subscriptions/\(id)?done=\(extended ? "extended" : "extension-refused")")
    }

    /// How long a confirmation page's form may be sent.
    static let confirmationLifetime = Duration.seconds(15 * 60)

    /// How long a console request waits for Apple's endpoint budget: the operator is looking at the
    /// page, and its lane serves no other page meanwhile.
    static let consolePatience = Duration.seconds(10)

    /// The extender, or the page that says the Server API's key is missing.
    private static func extender(_ fleet: FleetSettings, _ metrics: FleetMetrics, _ clock: any FleetClock) throws -> RenewalExtender {
        do {
            return try RenewalExtender(settings: fleet, metrics: metrics, clock: clock, patience: consolePatience)
        } catch let error as ExtensionError {
            throw ConsoleProblem.badRequest(error.description)
        }
    }
}

struct ConfirmExtendView {
    let chrome: Chrome
    var id: Int64
    var originalTransactionID: String
    var product: String
    var days: Int
    var reason: String
    /// What Apple will be asked, or nil when the ledger says Apple would refuse.
    var ask: String?
    var refusal: String?
    /// The one-time confirmation the form carries (`ConsoleStore.useConfirmation`).
    var confirmation: String

    init(who: OpsConsole.Operator, candidate: ExtensionCandidate, days: Int, reason: ExtendReason, confirmation: String) {
        self.confirmation = confirmation
        chrome = Chrome("Extend the renewal date?", tab: .subscriptions, viewer: who)
        (id, originalTransactionID, product) = (candidate.id, candidate.originalTransactionID, candidate.productID ?? "-")
        (self.days, self.reason) = (days, reason.name)
        if let why = candidate.ineligible {
            refusal = "It cannot be extended: \(why)."
        } else {
            let later = candidate.expiresAt.map { " Its period ends \(Shown.time($0)); then \(Shown.time($0.addingTimeInterval(Double(days) * 86_400)))." }
            ask = "Apple will be asked to extend it by \(days) days (\(reason.name))." + (later ?? "")
                + " Apple allows two extensions within 365 days, and an extension cannot be taken back."
        }
    }
}
