import AppStore
import FleetConfiguration
import Foundation
import Ledger
import Testing
import VerificationUseCase

/// A refund of an earlier period shows in no status on the Server API: only a read of the refunds
/// finds an unannounced one, and the audit promises to find every such change within its period.
@Suite struct RefundReadTests {
    /// The night the schedule plans a subscription's audit on is a night its refunds are read, even
    /// when a check between two audits read them days before; and that for any audit-days.
    @Test func theAuditNightTheScheduleChoosesReadsTheRefunds() throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        for audit in ["3", "30"] {
            let settings = try FleetSettings(.given([Settings.auditDays: audit, Settings.serverAPIRefundCheckDays: "7"]))
            let policy = settings
            let nextNight = policy.nextNightlyRun(after: now)
            // Renewing long after the audit: the audit is its next check.
            var active = SubscriptionState(originalTransactionID: "2000000000000001", status: .active, verifiedAt: Instant(now))
            active.expiresAt = Instant(now + 400 * 86_400)
            for id: Int64 in 1...40 {
                let audit = try #require(settings.checkSchedule.nextCheck(for: active, now: now, nextNightlyRun: nextNight, auditSlot: id))
                let readBefore = audit - 2 * 86_400
                #expect(policy.refundCheck(of: id, lastRead: Instant(readBefore)).isDue(at: Instant(audit + 60)),
                        "audit-days \(audit), subscription \(id): audited \(audit), read two days before")
            }
        }
    }
}
