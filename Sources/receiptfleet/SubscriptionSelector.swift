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

    @Option(help: "With --account: only this app (its name in apps-file); every app by default.")
    var app: String?

    func validate() throws {
        guard [id != nil, originalTransactionID != nil, account != nil].filter(\.self).count == 1 else {
            throw ValidationError("Give one of: an id, --original-transaction-id, --account.")
        }
        guard app == nil || account != nil else { throw ValidationError("--app goes with --account.") }
    }

    /// The ids selected, of `apps` (the configured apps' names) for an account; throws when there is none.
    func ids(in ledger: Ledger, apps: [String]) throws -> [Int64] {
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
