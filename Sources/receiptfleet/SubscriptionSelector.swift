import ArgumentParser
import Ledger

/// Which subscriptions a command is about: one by its id, or every one with an
/// original_transaction_id (it repeats across apps and environments).
struct SubscriptionSelector: ParsableArguments {
    @Argument(help: "The subscription id.")
    var id: Int64?

    @Option(name: .customLong("original-transaction-id"), help: "Find it by original_transaction_id instead.")
    var originalTransactionID: String?

    func validate() throws {
        guard (id == nil) != (originalTransactionID == nil) else {
            throw ValidationError("Give either an id or --original-transaction-id.")
        }
    }

    /// The ids selected; throws when there is none.
    func ids(in ledger: Ledger) throws -> [Int64] {
        let ids = try id.map { [$0] } ?? ledger.subscriptions(originalTransactionID: originalTransactionID!).map(\.id)
        guard !ids.isEmpty else { throw ValidationError("No such subscription.") }
        return ids
    }
}
