import ArgumentParser
import FleetConfiguration
import Foundation
import Ledger
import Operations
import PostgresClient
import Terminal

/// `receiptfleet subscriptions import|show|set-backend|forget`
struct Subscriptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load subscriptions into the ledger, look at one, move them between backends, extend them, or forget them.",
        subcommands: [Import.self, Show.self, SetBackend.self, Extend.self, Forget.self])

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add subscriptions from a CSV or JSON lines file.",
            discussion: """
                Each line names one subscription: original_transaction_id, receipt (base64; `receipt_data` \
                is accepted too), and optionally environment (Production or Sandbox), account_id, and app \
                (a name from apps-file) or bundle_id (the app's), which a deployment of several apps needs. \
                CSV files need a header line with those names. Lines already in the ledger are left as \
                they are; bad lines are reported by number and the good ones kept. New subscriptions are \
                due at once: the next `schedule` enqueues them.

                Examples:
                  receiptfleet subscriptions import subscriptions.jsonl
                  receiptfleet subscriptions import export.csv
                """)

        @OptionGroup var options: FleetOptions

        @Argument(help: "The file: .csv, or JSON lines (anything else).")
        var file: String

        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("Cannot read \(file): check the path and that it is readable.")
            }
            let settings = try options.settings()
            let (subscriptions, problems) = SubscriptionFile.parse(data, csv: file.hasSuffix(".csv"), apps: settings.apps)
            for problem in problems.prefix(20) { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            if problems.count > 20 { FileHandle.standardError.write(Data("… and \(problems.count - 20) more bad lines\n".utf8)) }
            let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
            let progress = ProgressLine()
            let (inserted, present) = try SubscriptionFile.add(subscriptions, to: ledger) {
                progress.show("imported \($0) of \(subscriptions.count)")
            }
            progress.finish()
            print("Added \(inserted), already present \(present), bad lines \(problems.count).")
            if !problems.isEmpty { throw ExitCode(2) }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one subscription: state, transactions, events, recent verifications and refund requests.",
            discussion: """
                --order takes the order id a customer quotes from Apple's receipt email: Apple's Look Up \
                Order ID lists the order's transactions (each signed payload verified), then the \
                subscriptions and one-time purchases of the ledger they belong to. Apple has it in \
                production only: a sandbox or TestFlight purchase's order is never found.

                Examples:
                  receiptfleet subscriptions show 42
                  receiptfleet subscriptions show --original-transaction-id 1000000218147500
                  receiptfleet subscriptions show --account user-8812
                  receiptfleet subscriptions show --account user-8812 --app photos
                  receiptfleet subscriptions show --order MQ5V6W7X8Y
                  receiptfleet subscriptions show --order MQ5V6W7X8Y --app photos
                """)

        @OptionGroup var options: FleetOptions

        @OptionGroup var selector: SubscriptionSelector

        func run() throws {
            let settings = try options.settings()
            let ledger = Ledger(try PostgresConnection(configuration: settings.postgresConfiguration()))
            try selector.show(in: ledger, settings: settings) { print($0) }
        }
    }
}
