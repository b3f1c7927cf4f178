import AppStore
import FleetConfiguration
import Foundation
import Ledger

/// `receiptfleet subscriptions extend`: what the command line asks Apple, each request recorded in
/// the audit trail as its OS user's, and what it says of each subscription as it goes.
extension RenewalExtender {
    /// Each subscription of `ids` by `days`, one request each, when Apple's rules (read from the
    /// ledger) allow it; without `asking`, says what it would ask. Returns how many were not extended.
    public func extendEach(
        _ ids: [Int64], days: Int, reason: ExtendReason, asking: Bool, settings: FleetSettings, say: (String) -> Void
    ) throws -> Int {
        let candidates = try candidates(ids: ids)
        for missing in Set(ids).subtracting(candidates.map(\.id)).sorted() { say("No subscription \(missing).") }
        var refused = ids.count - candidates.count
        for candidate in candidates {
            let named = "Subscription \(candidate.id) (\(candidate.originalTransactionID), \(candidate.productID ?? "no product yet"))"
            if let why = candidate.ineligible {
                say("\(named): not extended: \(why).")
                refused += 1
                continue
            }
            guard asking else {
                let later = candidate.expiresAt.map { " from \(Self.day($0)) to \(Self.day($0.addingTimeInterval(Double(days) * 86_400)))" } ?? ""
                say("\(named): would be extended by \(days) days\(later) (\(reason.name)).")
                continue
            }
            let outcome = try audited(
                "subscriptions.extend", target: "subscription \(candidate.id)", details: ["days": "\(days)", "reason": reason.name],
                settings: settings, results: { ["result": "\($0)"] }
            ) { try extend(candidate, days: days, reason: reason) }
            switch outcome {
            case .extended(let until, let identifier):
                say("\(named): extended\(until.map { " to \(Self.day($0))" } ?? "") (request \(identifier)); its check is queued.")
            case .refused(let why):
                say("\(named): Apple refused: \(why).")
                refused += 1
            }
        }
        return refused
    }

    /// Every active subscriber of `productID` in `app` and `environment` that the ledger knows, by
    /// `days`, in one request read until Apple is done (`progress` hears each reading); without
    /// `asking`, says what it would ask. Returns Apple's last reading, nil when it was not asked.
    public func extendActiveSubscribers(
        ofProduct productID: String, app: String, environment: AppStoreEnvironment, days: Int, reason: ExtendReason, poll: Duration,
        asking: Bool, settings: FleetSettings, say: (String) -> Void, progress: (String) -> Void
    ) throws -> MassExtensionStatus? {
        let subscribers = try activeSubscribers(ofProduct: productID, app: app, environment: environment)
        let eligible = subscribers.filter { $0.ineligible == nil }.count
        let reasons = Dictionary(grouping: subscribers.compactMap(\.ineligible), by: \.self).map { "\($0.value.count) \($0.key.rawValue)" }.sorted()
        say("The ledger knows \(subscribers.count) active subscriber(s) of \(productID) in \(app), \(environment.rawValue): \(eligible) eligible"
            + (reasons.isEmpty ? "." : ", the others not (\(reasons.joined(separator: ", "))): Apple will count them failed."))
        guard asking else {
            say("Would ask Apple to extend every active subscriber of \(productID) by \(days) days (\(reason.name)). Add --yes to ask Apple.")
            return nil
        }
        return try audited(
            "subscriptions.extend-all", target: "product \(productID)",
            details: ["app": app, "environment": environment.rawValue, "days": "\(days)", "reason": reason.name], settings: settings,
            results: { ["succeeded": "\($0.succeededCount ?? 0)", "failed": "\($0.failedCount ?? 0)"] }
        ) {
            try extendAll(
                productID: productID, app: app, environment: environment, subscribers: subscribers, days: days, reason: reason, poll: poll
            ) { status in
                progress("extend: Apple \(status.complete ? "is done" : "is working through the subscribers") "
                         + "(request \(status.requestIdentifier ?? "?"))")
            }
        }
    }

    private static func day(_ date: Date) -> String { date.formatted(.iso8601) }
}
