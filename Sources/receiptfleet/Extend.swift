import AppStore
import ArgumentParser
import Fleet
import FleetConfiguration
import FleetFlags
import Lanes
import Ledger
import Logging
import Operations
import PostgresClient
import Terminal

/// `receiptfleet subscriptions extend`
struct Extend: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Extend renewal dates through Apple: one customer's subscriptions, or every active subscriber of a product.",
        discussion: """
            Moves the end of the current period later by --days, to make up for an outage, say \
            (the App Store Server API's Extend a Subscription Renewal Date, or with --all-active Extend \
            Subscription Renewal Dates for All Active Subscribers; the server-api key is needed). \
            Apple's rules are checked against the ledger first: 1 to 90 days; at most two extensions \
            of a subscription within 365 days; only a paid, active period (not a free offer, billing \
            retry, grace past expiry, or expired); not Family Sharing. Without --yes nothing is \
            asked: the command says what it would ask. Each request carries a new request identifier; \
            a request that got no answer is asked again with the same one when the command is run \
            again, and Apple applies it once. --all-active then reads Apple's progress until it is \
            complete and reports how many subscriptions were extended and how many failed. Every \
            extended subscription's check is queued: the workers see the later expiry and announce \
            renewal_extended. Recorded in the audit trail (subscriptions.extend, subscriptions.extend-all).

            Reasons: undeclared, customer-satisfaction, other, service-issue (Apple's 0 to 3).

            Examples:
              receiptfleet subscriptions extend 42 --days 7 --reason service-issue
              receiptfleet subscriptions extend 42 --days 7 --reason service-issue --yes
              receiptfleet subscriptions extend --account user-8812 --days 5 --reason other
              receiptfleet subscriptions extend --order MQ5V6W7X8Y --days 5 --reason customer-satisfaction
              receiptfleet subscriptions extend --all-active --product com.example.pro \\
                --days 3 --reason service-issue
              receiptfleet subscriptions extend --all-active --product com.example.pro \\
                --app journal --environment Sandbox --days 3 --reason service-issue --yes
            """)

    @OptionGroup var options: FleetOptions

    @OptionGroup var selector: SubscriptionSelector

    @Flag(help: "Every active subscriber of --product instead, in one request to Apple.")
    var allActive = false

    @Option(help: "With --all-active: the subscription product whose subscribers are extended.")
    var product: String?

    @Option(help: "With --all-active: Production or Sandbox.", completion: .list(["Production", "Sandbox"]))
    var environment = AppStoreEnvironment.production

    @Option(help: "How many days to add: 1 to 90.")
    var days: Int

    @Option(help: "Why: undeclared, customer-satisfaction, other or service-issue.",
            completion: .list(ExtendReason.allCases.map(\.name)))
    var reason: String

    @Option(help: "With --all-active: seconds between readings of Apple's progress.")
    var poll = 10

    @Flag(help: "Ask Apple. Without it, nothing is asked: the command says what it would ask.")
    var yes = false

    func validate() throws {
        if allActive {
            guard !selector.isGiven else { throw ValidationError("--all-active extends a product's subscribers: name no subscription.") }
            guard product != nil else { throw ValidationError("--all-active needs --product: the subscription product to extend.") }
        } else {
            guard selector.isGiven else {
                throw ValidationError("Name the subscriptions: an id, --original-transaction-id, --account, --order, or --all-active --product ID.")
            }
            guard product == nil else { throw ValidationError("--product goes with --all-active.") }
        }
        guard RenewalExtension.days.contains(days) else {
            throw ValidationError("--days must be 1 to 90: Apple extends by at most 90 days at a time.")
        }
        guard ExtendReason(name: reason) != nil else {
            throw ValidationError("--reason must be one of \(ExtendReason.allCases.map(\.name).joined(separator: ", ")), not '\(reason)'.")
        }
        guard poll > 0 else { throw ValidationError("--poll must be at least 1 second.") }
    }

    func run() throws {
        let settings = try options.settings()
        let reason = ExtendReason(name: reason)!
        let metrics = FleetMetrics()
        defer { TimingsReporter.reportOnce(metrics, settings: settings, logger: Logger(label: "receiptfleet")) }
        let extender: RenewalExtender
        do {
            extender = try RenewalExtender(settings: settings, metrics: metrics, clock: settings.processClock())
        } catch let error as ExtensionError {
            throw ValidationError(error.description)
        }
        guard allActive else {
            let ids = try selector.ids(in: Ledger(try PostgresConnection(configuration: settings.postgresConfiguration())), settings: settings)
            let refused = try extender.extendEach(ids, days: days, reason: reason, asking: yes, settings: settings) { print($0) }
            if !yes, refused < ids.count { print("Add --yes to ask Apple.") }
            if refused > 0 { throw ExitCode(1) }
            return
        }
        let progress = ProgressLine()
        let status = try extender.extendActiveSubscribers(
            ofProduct: product ?? "", app: try settings.apps.owner(selector.app, of: "Products"), environment: environment, days: days, reason: reason,
            poll: .seconds(poll), asking: yes, settings: settings, say: { print($0) }, progress: { progress.show($0) })
        if let status {
            progress.finish()
            print("Apple extended \(status.succeededCount ?? 0) subscription(s); \(status.failedCount ?? 0) failed. "
                  + "The checks of the ledger's eligible subscribers are queued: the workers announce renewal_extended.")
        }
    }
}
