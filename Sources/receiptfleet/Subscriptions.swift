import AppStore
import ArgumentParser
import Fleet
import FleetConfiguration
import Foundation
import Ledger
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
            var inserted = 0
            var present = 0
            for start in stride(from: 0, to: subscriptions.count, by: 10_000) {
                let batch = Array(subscriptions[start..<min(start + 10_000, subscriptions.count)])
                let result = try ledger.addSubscriptions(batch)
                inserted += result.inserted
                present += result.alreadyPresent
                progress.show("imported \(start + batch.count) of \(subscriptions.count)")
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
            let orders = try selector.orders(in: ledger, settings: settings)
            for order in orders { print(OrderReport(order).text) }
            // An order's subscriptions come with it: Apple is asked once.
            let ids = try selector.order == nil ? selector.ids(in: ledger, settings: settings) : orders.flatMap { $0.subscriptions.map(\.id) }
            for id in ids {
                guard let detail = try ledger.detail(id: id) else { throw NotFound("No subscription \(id).") }
                print(SubscriptionReport(detail, refundRequests: try ledger.consumptionRequests(subscriptionID: id)).text)
            }
        }
    }
}

/// Reads subscription files: JSON lines or CSV with a header. Each line is judged alone, bytes
/// first: a line that is not UTF-8, or whose fields hold a control character (a NUL, which
/// PostgreSQL refuses in text), is reported by its number and the others are kept.
enum SubscriptionFile {
    /// Each line's app is its `app`, else the app of its `bundle_id`, else the deployment's one app.
    static func parse(_ data: Data, csv: Bool, apps: AppCatalog) -> ([NewSubscription], [String]) {
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { String(validating: $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0, as: UTF8.self) }
        var header: [String] = []
        var problems: [String] = []
        if csv, !lines.isEmpty {
            guard let first = lines.removeFirst() else { return ([], ["line 1: the header is not UTF-8 text"]) }
            header = first.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        var subscriptions: [NewSubscription] = []
        for (index, line) in lines.enumerated() {
            let number = index + (csv ? 2 : 1)
            guard let line else {
                problems.append("line \(number): not UTF-8 text")
                continue
            }
            guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            let fields: [String: String]
            if csv {
                let values = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                guard values.count == header.count else {
                    problems.append("line \(number): \(values.count) fields where the header has \(header.count)")
                    continue
                }
                fields = Dictionary(zip(header, values), uniquingKeysWith: { first, _ in first })
            } else {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    problems.append("line \(number): not a JSON object")
                    continue
                }
                fields = object.compactMapValues { $0 is NSNull ? nil : "\($0)" }
            }
            guard !fields.values.contains(where: { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) else {
                problems.append("line \(number): a field holds a control character (a NUL?), which the ledger cannot store")
                continue
            }
            guard let id = fields["original_transaction_id"], !id.isEmpty else {
                problems.append("line \(number): original_transaction_id is missing")
                continue
            }
            guard let receipt = fields["receipt"] ?? fields["receipt_data"], !receipt.isEmpty else {
                problems.append("line \(number): receipt is missing")
                continue
            }
            let environmentName = fields["environment"] ?? "Production"
            guard let environment = AppStoreEnvironment(rawValue: environmentName) else {
                problems.append("line \(number): environment must be Production or Sandbox, not '\(environmentName)'")
                continue
            }
            let app = fields["app"].map { apps.app(named: $0)?.name } ?? apps.app(bundleID: fields["bundle_id"])?.name
            guard let app else {
                problems.append("line \(number): " + (fields["app"].map { "no app is named '\($0)'" }
                    ?? fields["bundle_id"].map { "the bundle id \($0) is no app's" } ?? "name its app (app or bundle_id)")
                    + "; the apps are \(apps.names.joined(separator: ", "))")
                continue
            }
            subscriptions.append(NewSubscription(
                app: app, originalTransactionID: id, environment: environment,
                receipt: ReceiptData(base64: receipt), accountID: fields["account_id"]))
        }
        return (subscriptions, problems)
    }
}
