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
        let ids = try selector.ids(in: ledger, settings: settings)
        let exit = try ImmediateVerification.run(ids, ledger: ledger, settings: settings, logger: logger) { print($0) }
        if exit != 0 { throw ExitCode(exit) }
    }
}
