import Fleet
import FleetConfiguration
import Ledger
import Logging

extension ImmediateVerification {
    /// `receiptfleet verify`: each subscription of `ids` verified now, as a worker would, and told
    /// to `say` with its report and result. Returns the command's exit status: 0 when each was
    /// verified (or Apple said it never can be), 1 when one failed in a way worth retrying, 3 when
    /// the fleet was paused or halted and nothing was sent. Its calls to Apple join the fleet's timings.
    public static func run(_ ids: [Int64], ledger: Ledger, settings: FleetSettings, logger: Logger, say: (String) -> Void) throws -> Int32 {
        let metrics = FleetMetrics()
        defer { TimingsReporter.reportOnce(metrics, settings: settings, logger: logger) }
        var exit: Int32 = 0
        for id in ids {
            guard let subscription = try ledger.subscription(id: id) else { throw NotFound("No subscription \(id).") }
            let settlement = try run(subscriptionID: id, settings: settings, metrics: metrics, logger: logger)
            if let detail = try ledger.detail(id: id) { say(SubscriptionReport(detail).text) }
            switch settlement {
            case .ack, .bury, .retry:
                say("result        \(settlement)")
                if case .retry = settlement { exit = max(exit, 1) }
            case .postpone:
                say("result        not verified: \(try FleetStatus.read(settings: settings).whyPostponed(app: subscription.app))")
                exit = 3
            }
        }
        return exit
    }
}
