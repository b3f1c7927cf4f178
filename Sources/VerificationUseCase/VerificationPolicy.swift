import AppStore
import Foundation

/// What the verification use case reads of the deployment's settings: `FleetSettings` is one, so
/// each value is the setting itself, not a copy.
public protocol VerificationPolicy: Sendable {
    /// The backend of subscriptions that name none.
    var defaultBackend: VerificationBackend { get }
    /// How long after a purchase its registration still announces `initial_purchase`.
    var initialPurchaseWindow: TimeInterval { get }
    /// Products sold as non-renewing subscriptions (one-time purchases with an expiry).
    var nonRenewingProductIDs: Set<String> { get }
    /// How many different subscriptions must answer a configuration error in a row before it halts.
    var haltAfterConfigurationErrors: Int { get }
    /// The UTC hour of the nightly run, which a write's next check is planned around.
    var nightlyHourUTC: Int { get }
    /// The app a subscription belongs to when it names none.
    var defaultApp: String { get }
    /// How many days apart a Server API verification reads a quiet subscription's refunded
    /// transactions (`RefundCheck`).
    var refundCheckDays: Int { get }
    /// Nights between a subscription's audits (`CheckSchedule.auditNights`), on each of which its
    /// refunds are read too; nil: active subscriptions are checked nightly.
    var auditNights: Int? { get }
}

extension VerificationPolicy {
    /// When the quiet Server API subscription `id`, whose refunds were last read at `lastRead`, reads them again.
    public func refundCheck(of id: Int64, lastRead: Instant?) -> RefundCheck {
        RefundCheck(lastRead: lastRead, everyDays: refundCheckDays, auditNights: auditNights, turn: NightlyTurn(slot: id))
    }

    /// The first nightly run strictly after `now`.
    public func nextNightlyRun(after now: Date) -> Date {
        let day: TimeInterval = 86_400
        let startOfDay = (now.timeIntervalSince1970 / day).rounded(.down) * day
        var run = Date(timeIntervalSince1970: startOfDay + TimeInterval(nightlyHourUTC) * 3_600)
        while run <= now { run += day }
        return run
    }
}

/// What the use case counts: Apple's answers and the writes' durations (`FleetMetrics`, or nothing in tests).
public protocol VerificationMetrics: Sendable {
    func answered(_ exchange: VerificationExchange)
    func persisted(in duration: Duration)
}
