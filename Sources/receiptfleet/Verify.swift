import ArgumentParser
import Fleet
import Ledger
import Operations
import PostgresClient

/// `receiptfleet verify`
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify one subscription with Apple now and show the result.",
        discussion: """
            Takes the same steps as a worker, outside the queue: the fleet's halt, pause and rate \
            limit, verifyReceipt, the analysis, and one transaction that stores the new state, \
            transactions and events. Exits 0 when the subscription was verified (or Apple said it \
            never can be), 1 when it failed in a way worth retrying, 3 when the fleet is paused or \
            halted and nothing was sent.

            Examples:
              receiptfleet verify 42
              receiptfleet verify --original-transaction-id 1000000218147500
              receiptfleet verify --account user-8812
              receiptfleet verify --order MQ5V6W7X8Y
            """)

    @OptionGroup var options: FleetOptions

    @OptionGroup var selector: SubscriptionSelector

    func run() throws {
        let (logger, _, settings) = try options.setUp(unset: .warning)
        let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
        var exit: Int32 = 0
        for id in try selector.ids(in: ledger, settings: settings) {
            guard let subscription = try ledger.subscription(id: id) else { throw NotFound("No subscription \(id).") }
            let settlement = try ImmediateVerification.run(subscriptionID: id, settings: settings, logger: logger)
            if let detail = try ledger.detail(id: id) { print(SubscriptionReport(detail).text) }
            switch settlement {
            case .ack, .bury, .retry:
                print("result        \(settlement)")
                if case .retry = settlement { exit = max(exit, 1) }
            case .postpone:
                print("result        not verified: \(try FleetStatus.read(settings: settings).whyPostponed(app: subscription.app))")
                exit = 3
            }
        }
        if exit != 0 { throw ExitCode(exit) }
    }
}
