import FleetConfiguration
import Testing
import VerificationUseCase

/// A refund of an earlier period shows in no status on the Server API: only a read of the refunds
/// finds an unannounced one, and the audit promises to find every such change within its period.
@Suite struct RefundReadTests {
    @Test func refundsAreReadAtLeastAsOftenAsTheAuditLooks() throws {
        func days(audit: String, refundCheck: String) throws -> Int {
            try FleetSettings(.given([Settings.auditDays: audit, Settings.serverAPIRefundCheckDays: refundCheck]))
                .verificationPolicy.refundCheckDays
        }
        #expect(try days(audit: "30", refundCheck: "7") == 7)
        #expect(try days(audit: "3", refundCheck: "7") == 3, "every audit reads them")
        #expect(try days(audit: "0", refundCheck: "7") == 7, "checked nightly: no audit to keep up with")
    }
}
