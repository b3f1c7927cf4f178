import ArgumentParser
import Ledger

/// Which subscriptions a command is about: one by its id, every one with an original_transaction_id
/// (it repeats across apps and environments), or every one linked to an account.
struct SubscriptionSelector: ParsableArguments {
    @Argument(help: "The subscription id.")
    var id: Int64?

    @Option(name: .customLong("original-transaction-id"), help: "Find it by original_transaction_id instead.")
    var originalTransactionID: String?

    @Option(help: "Every subscription linked to this account id (as your app registered it) instead.")
    var account: String?

    @Option(help: "Only this app (its name in apps-file): with --account, every app by default; with extend --all-active, the product's app.")
    var app: String?

    /// Whether a subscription was named: a command may offer another way (`extend --all-active`),
    /// and then checks itself that one way was taken.
    var isGiven: Bool { id != nil || originalTransactionID != nil || account != nil }

    func validate() throws {
        guard [id != nil, originalTransactionID != nil, account != nil].filter(\.self).count <= 1 else { throw Self.nameOne }
        guard app == nil || account != nil || !isGiven else { throw ValidationError("--app goes with --account.") }
    }

    private static let nameOne = ValidationError("Give one of: an id, --original-transaction-id, --account.")

    /// The ids selected, of `apps` (the configured apps' names) for an account; throws when there is none.
    func ids(in ledger: Ledger, apps: [String]) throws -> [Int64] {
        guard isGiven else { throw Self.nameOne }
        if let id { return [id] }
        if let originalTransactionID {
            let ids = try ledger.subscriptions(originalTransactionID: originalTransactionID).map(\.id)
            guard !ids.isEmpty else { throw ValidationError("No subscription has original_transaction_id \(originalTransactionID).") }
            return ids
        }
        let searched = app.map { [$0] } ?? apps
        let ids = try searched.flatMap { try ledger.subscriptions(accountID: account!, app: $0) }.map(\.id)
        guard !ids.isEmpty else {
            throw ValidationError("No subscription is linked to account '\(account!)' in \(searched.joined(separator: ", ")).")
        }
        return ids
    }
}
