import AppStore
import Foundation

/// What the verification use case reads of the deployment's settings (`FleetSettings.verificationPolicy`).
public struct VerificationPolicy: Sendable {
    /// The backend of subscriptions that name none.
    public var defaultBackend: VerificationBackend
    /// How long after a purchase its registration still announces `initial_purchase`.
    public var initialPurchaseWindow: TimeInterval
    /// Products sold as non-renewing subscriptions (one-time purchases with an expiry).
    public var nonRenewingProductIDs: Set<String>
    /// How many different subscriptions must answer a configuration error in a row before it halts.
    public var haltAfterConfigurationErrors: Int
    /// The UTC hour of the nightly run, which a write's next check is planned around.
    public var nightlyHourUTC: Int
    /// The app a subscription belongs to when it names none.
    public var defaultApp: String
    /// How many days apart a Server API verification reads a quiet subscription's refunded
    /// transactions (`RefundCheck`).
    public var refundCheckDays: Int
    /// Nights between a subscription's audits (`CheckSchedule.auditNights`), on each of which its
    /// refunds are read too; nil: active subscriptions are checked nightly.
    public var auditNights: Int?

    public init(
        defaultBackend: VerificationBackend, initialPurchaseWindow: TimeInterval, nonRenewingProductIDs: Set<String>,
        haltAfterConfigurationErrors: Int, nightlyHourUTC: Int, defaultApp: String, refundCheckDays: Int = 7,
        auditNights: Int? = nil
    ) {
        self.defaultBackend = defaultBackend
        self.initialPurchaseWindow = initialPurchaseWindow
        self.nonRenewingProductIDs = nonRenewingProductIDs
        self.haltAfterConfigurationErrors = haltAfterConfigurationErrors
        self.nightlyHourUTC = nightlyHourUTC
        self.defaultApp = defaultApp
        self.refundCheckDays = refundCheckDays
        self.auditNights = auditNights
    }

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
