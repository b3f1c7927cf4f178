import ArgumentParser
import FleetConfiguration
import Ledger
import Operations

/// The three ways every command names subscriptions: one by its id, every one with an
/// original_transaction_id (it repeats across apps and environments), every one linked to an
/// account. `Words` gives each its help in the command's terms: what `forget` deletes with an
/// account is more than the subscriptions `show` finds.
struct SubscriptionNames<Words: SubscriptionWords>: ParsableArguments {
    @Argument(help: ArgumentHelp(Words.id))
    var id: Int64?

    @Option(name: .customLong("original-transaction-id"), help: ArgumentHelp(Words.originalTransactionID))
    var originalTransactionID: String?

    @Option(help: ArgumentHelp(Words.account))
    var account: String?

    /// How many of the three ways were taken.
    var given: Int { [id != nil, originalTransactionID != nil, account != nil].filter(\.self).count }
}

/// The help of the three ways of naming subscriptions, in one command's terms.
protocol SubscriptionWords {
    static var id: String { get }
    static var originalTransactionID: String { get }
    static var account: String { get }
}

/// Which subscriptions a command that looks at them or asks Apple about them is about: named in
/// one of the three ways, or as those of an order Apple knows by the id on its receipt email.
struct SubscriptionSelector: ParsableArguments {
    enum Words: SubscriptionWords {
        static let id = "The subscription id."
        static let originalTransactionID = "Find it by original_transaction_id instead."
        static let account = "Every subscription linked to this account id (as your app registered it) instead."
    }

    @OptionGroup var named: SubscriptionNames<Words>

    @Option(help: """
        The order id on the customer's receipt email from Apple instead (Apple's Look Up Order ID, production only; \
        the server-api key is needed).
        """)
    var order: String?

    @Option(help: "Only this app (its name in apps-file): with --account or --order, every app by default; with extend --all-active, the product's app.")
    var app: String?

    /// Whether a subscription was named: a command may offer another way (`extend --all-active`),
    /// and then checks itself that one way was taken.
    var isGiven: Bool { named.given > 0 || order != nil }

    func validate() throws {
        guard named.given + (order == nil ? 0 : 1) <= 1 else { throw Self.nameOne }
        guard app == nil || named.account != nil || order != nil || !isGiven else { throw ValidationError("--app goes with --account or --order.") }
    }

    private static let nameOne = ValidationError("Give one of: an id, --original-transaction-id, --account, --order.")

    /// What was named, as the library selects it; nil when nothing was.
    private var selection: SubscriptionSelection? {
        if let id = named.id { return .id(id) }
        if let originalTransactionID = named.originalTransactionID { return .originalTransactionID(originalTransactionID) }
        if let account = named.account { return .account(account, app: app) }
        return order.map { .order($0, app: app) }
    }

    /// The ids selected (for an account or an order, of the apps `--app` names, else every
    /// configured app); throws when there is none.
    func ids(in ledger: Ledger, settings: FleetSettings) throws -> [Int64] {
        try selected { try $0.ids(in: ledger, settings: settings) }
    }

    /// What `subscriptions show` says of them: an order's report first, then each subscription's.
    func show(in ledger: Ledger, settings: FleetSettings, report: (String) -> Void) throws {
        try selected { try $0.show(in: ledger, settings: settings, report: report) }
    }

    /// `body` on what was named. An order that cannot be looked up is the operator's to correct:
    /// said with the usage.
    private func selected<T>(_ body: (SubscriptionSelection) throws -> T) throws -> T {
        guard let selection else { throw Self.nameOne }
        do {
            return try body(selection)
        } catch let error as OrderLookupError {
            throw ValidationError(error.description)
        }
    }
}
